"""The ingest pipeline: scan → hash → convert → embed → store, as a stream of events.

- :mod:`.ingest_run`: the run, its stages (running at once) and how they hand files on;
- :mod:`.change_detection`: which files are new, changed, unchanged, duplicate or gone;
- :mod:`.job`: a file on its way, and the records it ends as;
- :mod:`.embed_batches`: converted files' chunks cut into full embed calls across files;
- :mod:`.document_steps`: each file's end, written through the ledger;
- :mod:`.progress`: the events a watcher sees, counts, rate and time left;
- :mod:`.machine`: how many embedding threads and converters, sized to the cores.
"""

from app.ingest.pipeline.change_detection import file_hash
from app.ingest.pipeline.embed_batches import EMBED_BATCH
from app.ingest.pipeline.ingest_run import IngestPipeline
from app.ingest.pipeline.progress import PROGRESS_INTERVAL_S

__all__ = ["EMBED_BATCH", "PROGRESS_INTERVAL_S", "IngestPipeline", "file_hash"]
