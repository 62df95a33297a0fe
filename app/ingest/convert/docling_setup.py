"""Building Docling's converter, offline: PDFs go through Docling's model-free
native pipeline unless its layout models are present in a local folder."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Literal

from app.core.serial_import import serial_import
from app.ingest.convert.markdown_html import read_markdown_html_blocks_as_html
from app.ingest.docling_formats import docling_formats

PdfPipeline = Literal["standard", "native"]


def layout_models_present(artifacts_path: str) -> bool:
    """True when ``artifacts_path`` holds Docling's layout model files."""
    if not artifacts_path:
        return False
    folder = Path(artifacts_path).expanduser()
    if not folder.is_dir():
        return False
    return any(
        child.is_dir() and ("docling-layout" in child.name or child.name == "ds4sd--docling-models")
        for child in folder.iterdir()
    )


def pdf_pipeline_for(artifacts_path: str) -> PdfPipeline:
    """The PDF pipeline: "standard" (layout models) when they are present, else "native" (text only)."""
    return "standard" if layout_models_present(artifacts_path) else "native"


def build_docling_converter(artifacts_path: str, pdf_pipeline: str) -> Any:
    """A Docling ``DocumentConverter`` for the formats Fathom reads with it (costly: build once)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    for name in ("docling", "docling_core", "docling_parse"):
        logging.getLogger(name).setLevel(logging.ERROR)
    with serial_import("docling.document_converter"):
        from docling.datamodel.base_models import InputFormat
        from docling.document_converter import DocumentConverter, PdfFormatOption

    read_markdown_html_blocks_as_html()

    if pdf_pipeline == "standard":
        from docling.datamodel.pipeline_options import PdfPipelineOptions

        options = PdfPipelineOptions(
            artifacts_path=artifacts_path, do_ocr=False, enable_remote_services=False
        )
        pdf_option = PdfFormatOption(pipeline_options=options)
    else:
        from docling.datamodel.pipeline_options import NativePdfPipelineOptions
        from docling.pipeline.native_pdf_pipeline import NativePdfPipeline

        pdf_option = PdfFormatOption(
            pipeline_cls=NativePdfPipeline, pipeline_options=NativePdfPipelineOptions()
        )
    formats = [InputFormat(fmt.name) for fmt in docling_formats() if not fmt.missing]
    return DocumentConverter(allowed_formats=formats, format_options={InputFormat.PDF: pdf_option})
