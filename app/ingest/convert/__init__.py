"""Files to chunk pieces: Docling for documents, a plain reader for text and code.

- :mod:`.converter`: one file, checked, then read the way its type calls for;
- :mod:`.input_checks`: bad input said in a sentence before a parser sees it;
- :mod:`.text_files`: plain text and code, decoded;
- :mod:`.csv_files`: CSV as Markdown tables, without Docling's object per cell;
- :mod:`.docling_files`: documents through Docling (title, page count);
- :mod:`.docling_setup`: building Docling's converter, offline;
- :mod:`.markdown_html`: HTML blocks in Markdown read as HTML (tables stay tables);
- :mod:`.markdown_front_matter`: YAML front matter kept out of the chunks;
- :mod:`.text_sources`: Markdown, CSV, AsciiDoc and HTML that are not UTF-8, decoded for Docling;
- :mod:`.worker_pool`: converters in worker processes, off the event loop;
- :mod:`.results`: what a conversion hands back.

Which files are read at all is :mod:`app.ingest.file_types`.
"""

from app.ingest.convert.converter import Converter, ConverterConfig
from app.ingest.convert.docling_setup import layout_models_present
from app.ingest.convert.results import ConvertedDocument, ConvertOutcome
from app.ingest.convert.text_files import decode_text
from app.ingest.convert.worker_pool import ConversionPool, ExecutorKind
from app.ingest.file_types import file_kind, supported_types_sentence

__all__ = [
    "ConversionPool",
    "ConvertOutcome",
    "ConvertedDocument",
    "Converter",
    "ConverterConfig",
    "ExecutorKind",
    "decode_text",
    "file_kind",
    "layout_models_present",
    "supported_types_sentence",
]
