"""metrics_core.contract.check_task is the one task check: every entry point names the argument and the
accepted tasks alike."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metrics_core import monitoring as mon
from metrics_core.contract import check_task, resolve_layout
from metrics_core.dataset import resolve_class_list, scan_stats
from metrics_core.errors import InputError
from metrics_core.ons import recommend
from metrics_core.significance import paired_bootstrap

MESSAGE = r"^task: expected 'binary' or 'multiclass', got 'multilabel'\."


def test_every_entry_point_says_which_tasks_exist(tmp_path):
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"label": [0, 1], "score": [0.2, 0.8]}), path)
    y = np.array([0, 1, 0, 1])
    calls = [lambda: check_task("multilabel"),
             lambda: resolve_layout(pa.schema([("label", pa.int8())]), "multilabel"),
             lambda: scan_stats(path, "multilabel"),
             lambda: mon.scan_period(path, "multilabel", [0, 1], label="label", scores=["score"]),
             lambda: resolve_class_list(path, "multilabel"),
             lambda: paired_bootstrap("accuracy", y, y, y, task="multilabel", n_boot=10)]
    for call in calls:
        with pytest.raises(InputError, match=MESSAGE + "$"):
            call()
    with pytest.raises(InputError, match=MESSAGE + r" ONS Tables 1 and 2 cover these two; for multilabel data apply "
                                                   r"the binary table to each label\.$"):
        recommend("multilabel", True, True)
