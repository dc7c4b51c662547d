"""Mixed-source datasets: documents as ``(doc_id, source)``, qrels on originals, validated loading."""

from sourcebias.data.corpus import Corpus, Document, join_title_text
from sourcebias.data.dataset import Dataset, DatasetLayout, detect_layout, load_dataset, require_evaluable, require_twins
from sourcebias.data.options import HUMAN, DatasetOptions, recorded_options
from sourcebias.data.qrels import Qrels
from sourcebias.data.readers import LoadReport, read_corpus, read_qrels, read_queries

__all__ = [
    "HUMAN",
    "Corpus",
    "Dataset",
    "DatasetLayout",
    "DatasetOptions",
    "Document",
    "LoadReport",
    "Qrels",
    "detect_layout",
    "join_title_text",
    "load_dataset",
    "read_corpus",
    "read_qrels",
    "read_queries",
    "recorded_options",
    "require_evaluable",
    "require_twins",
]
