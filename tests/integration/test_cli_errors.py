"""The command line answers every bad input with one line naming the file, the column or the
argument (no traceback), refuses per-column files that name absent columns, and reports a
model's totals first."""
import json
import re

import numpy as np
import pandas as pd
import pytest

from dpxgb_dask.cli import main
from dpxgb_dask.params import resolve_params
from dpxgb_dask.training import train_in_process


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A training table, a model trained on it, and the bad files of the cases below."""
    path = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(0)
    table = pd.DataFrame(rng.normal(size=(600, 3)), columns=["a", "b", "c"])
    table["y"] = (table["a"] > 0).astype(int)
    table.to_csv(path / "train.csv", index=False)
    table.drop(columns=["c"]).to_csv(path / "lacks_c.csv", index=False)
    text = table.astype({"a": object})
    text.loc[5, "a"] = "twelve"
    text.to_csv(path / "text.csv", index=False)
    (path / "empty.csv").write_text("")
    (path / "header_only.csv").write_text("a,b,c,y\n")
    (path / "bounds.json").write_text(json.dumps({c: [-4, 4] for c in "abc"}))
    (path / "bounds_extra.json").write_text(json.dumps({"a": [-4, 4], "b": [-4, 4],
                                                        "c": [-4, 4], "d": [0, 1]}))
    (path / "bounds_extra.csv").write_text("feature,lo,hi\na,-4,4\nb,-4,4\nc,-4,4\nd,0,1\n")
    (path / "bounds_short.json").write_text(json.dumps({"a": [-4, 4]}))
    (path / "categories.json").write_text(json.dumps({"colour": ["red", "blue"]}))
    (path / "not_a_model.json").write_text(json.dumps({"hello": "world"}))
    (path / "not_json.json").write_text("{this is not json")
    (path / "list.json").write_text("[1, 2]")
    params = resolve_params("binary:logistic", epsilon=1.0, n_estimators=3,
                            feature_bounds=[[-4, 4]] * 3)
    booster, _ = train_in_process(params, table[["a", "b", "c"]], table["y"])
    booster.feature_names = ["a", "b", "c"]  # (as train() names them from the frame)
    booster.save_model(path / "model.json")
    return path


# (id, arguments with {} for the directory, pattern of the one line)
CASES = [
    ("predict: a column missing", "predict {}/model.json {}/lacks_c.csv",
     r"DATA .*lacks_c\.csv lacks the model's columns \['c'\]"),
    ("predict: text in a numeric column", "predict {}/model.json {}/text.csv",
     r"DATA .*text\.csv: columns \['a'\] are not numeric"),
    ("predict: an empty file", "predict {}/model.json {}/empty.csv", r"DATA .*empty\.csv is empty"),
    ("predict: a missing file", "predict {}/model.json {}/absent.csv",
     r"DATA .*absent\.csv: no such file"),
    ("predict: a missing model", "predict {}/absent.json {}/train.csv",
     r"MODEL .*absent\.json: no such file"),
    ("predict: JSON that is not a model", "predict {}/not_a_model.json {}/train.csv",
     r"MODEL .*not_a_model\.json is not a valid dpxgb_dask model"),
    ("predict: a model file that is not JSON", "predict {}/not_json.json {}/train.csv",
     r"MODEL .*not_json\.json is not a valid dpxgb_dask model: .*not a JSON model file"),
    ("report: a JSON list", "report {}/list.json", r"MODEL .*list\.json is not a valid"),
    ("report: a missing key file", "report {}/model.json --key-file {}/absent.key",
     r"--key-file .*absent\.key: no such file"),
    ("train: text in a numeric column", "train {}/text.csv --label y --bounds {}/bounds.json",
     r"DATA .*text\.csv: columns \['a'\] are not numeric: give .* --categories"),
    ("train: an empty file", "train {}/empty.csv --label y --bounds {}/bounds.json",
     r"DATA .*empty\.csv is empty"),
    ("train: no rows", "train {}/header_only.csv --label y --bounds {}/bounds.json --quiet",
     r"DATA .*header_only\.csv has no rows"),
    ("train: a missing file", "train {}/absent.csv --label y", r"DATA .*absent\.csv: no such"),
    ("train: an absent label", "train {}/train.csv --label z --bounds {}/bounds.json",
     r"--label 'z' is not a column of .*train\.csv"),
    ("train: bounds for an absent column (JSON)",
     "train {}/train.csv --label y --bounds {}/bounds_extra.json",
     r"--bounds .*bounds_extra\.json names columns that .*train\.csv does not have: \['d'\]"),
    ("train: bounds for an absent column (CSV)",
     "train {}/train.csv --label y --bounds {}/bounds_extra.csv",
     r"--bounds .*bounds_extra\.csv names columns .* \['d'\]"),
    ("train: bounds missing a column", "train {}/train.csv --label y --bounds {}/bounds_short.json",
     r"--bounds .*bounds_short\.json has no bounds for columns \['b', 'c'\]"),
    ("train: a missing bounds file", "train {}/train.csv --label y --bounds {}/absent.json",
     r"--bounds .*absent\.json: no such file"),
    ("train: categories of an absent column",
     "train {}/train.csv --label y --bounds {}/bounds.json --categories {}/categories.json",
     r"--categories .*categories\.json names columns .* \['colour'\]"),
    ("train: a bad epsilon", "train {}/train.csv --label y --bounds {}/bounds.json --epsilon -1",
     r"dpxgb: train: epsilon must be in \(0, inf\], got -1"),
]


@pytest.mark.parametrize("arguments, pattern", [pytest.param(a, p, id=i) for i, a, p in CASES])
def test_a_bad_input_is_one_line_naming_it(files, arguments, pattern):
    argv = arguments.replace("{}", str(files)).split()
    with pytest.raises(SystemExit) as raised:
        main(argv)
    message = str(raised.value.code)
    assert isinstance(raised.value.code, str) and "\n" not in message  # one line, exit 1
    assert message.startswith("dpxgb: ")
    assert re.search(pattern, message), message


def test_the_traceback_is_there_on_request(files, monkeypatch):
    monkeypatch.setenv("DPXGB_TRACEBACK", "1")
    with pytest.raises(ValueError, match="epsilon must be in"):
        main(["train", f"{files}/train.csv", "--label", "y", "--bounds",
              f"{files}/bounds.json", "--epsilon", "-1"])


def test_report_shows_the_totals_first_and_the_releases_with_verbose(files, capsys):
    assert main(["report", f"{files}/model.json"]) == 0
    short = capsys.readouterr().out.splitlines()
    assert short[0].startswith("epsilon (basic)") and short[2].startswith("epsilon (pld  ) = ")
    assert float(short[2].split("=")[1]) == pytest.approx(1.0, rel=1e-4)
    assert len(short) <= 15 and "--verbose" in short[-1]
    assert main(["report", f"{files}/model.json", "--verbose"]) == 0
    full = capsys.readouterr().out.splitlines()
    assert full[:len(short) - 1] == short[:-1]
    assert any(line.startswith("purpose     mechanism  tree") for line in full)
    assert len(full) > len(short)


def test_silo_identity_makes_an_identity_once_and_shows_its_key(tmp_path, capsys):
    path = tmp_path / "silo.pem"
    assert main(["silo-identity", str(path)]) == 0
    made = capsys.readouterr().out.strip()
    assert re.fullmatch("[0-9a-f]{64}", made) and path.stat().st_mode & 0o777 == 0o600
    with pytest.raises(SystemExit, match="exists; an identity is never overwritten"):
        main(["silo-identity", str(path)])
    assert main(["silo-identity", str(path), "--show"]) == 0
    assert capsys.readouterr().out.strip() == made
    (tmp_path / "bounds.json").write_text("{}")
    with pytest.raises(SystemExit, match="silo-identity: .* holds no unencrypted PEM"):
        main(["silo-identity", str(tmp_path / "bounds.json"), "--show"])


def test_train_overwrites_no_model_file_without_force(files, capsys):
    """Issue 43: with no --out, dpxgb train overwrote an existing model.json without a word
    (a 2.7 MB one sat committed at the repository's root). It is refused before the fit;
    --force overwrites."""
    out = f"{files}/model.json"
    before = open(out, "rb").read()
    with pytest.raises(SystemExit, match=r"--out .*model\.json exists: give --force"):
        main(["train", f"{files}/train.csv", "--label", "y", "--bounds",
              f"{files}/bounds.json", "--out", out])
    assert open(out, "rb").read() == before


def test_a_semicolon_table_reads_with_sep_and_a_closed_pipe_ends_quietly(files, tmp_path):
    """Issue 43: a semicolon CSV gave "unknown label column" (no --sep), and
    `dpxgb predict ... | head` ended with "[Errno 32] Broken pipe"."""
    import os
    import subprocess
    import sys

    table = pd.read_csv(f"{files}/train.csv")
    big = pd.concat([table] * 40, ignore_index=True)  # (24,000 rows: past a pipe's buffer)
    big.drop(columns=["y"]).to_csv(tmp_path / "big.csv", sep=";", index=False)
    assert main(["predict", f"{files}/model.json", str(tmp_path / "big.csv"), "--sep", ";",
                 "--out", str(tmp_path / "p.csv")]) == 0
    assert len(pd.read_csv(tmp_path / "p.csv")) == 24_000
    dpxgb = os.path.join(os.path.dirname(sys.executable), "dpxgb")
    done = subprocess.run(f"{dpxgb} predict {files}/model.json {tmp_path}/big.csv --sep ';' "
                          "| head -n 2", shell=True, capture_output=True, text=True,
                          timeout=300)
    assert done.stdout.splitlines()[0] == "prediction" and len(done.stdout.splitlines()) == 2
    assert "Broken pipe" not in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_train_charges_a_budget_kept_in_a_file(files, tmp_path, capsys):
    """Issue 43, item 5: `dpxgb budget create ... --file budgets.json` then `dpxgb train ...
    --budget analysts` failed ("does not exist on this scheduler"), and train had no
    --budget-file. The embedded cluster's scheduler keeps the file's budgets."""
    budgets = str(tmp_path / "budgets.json")
    assert main(["budget", "create", "analysts", "--epsilon", "3", "--file", budgets]) == 0
    assert main(["train", f"{files}/train.csv", "--label", "y", "--bounds",
                 f"{files}/bounds.json", "--n-estimators", "3", "--quiet", "--budget",
                 "analysts", "--budget-file", budgets, "--out", str(tmp_path / "m.json")]) == 0
    capsys.readouterr()
    assert main(["budget", "show", "analysts", "--file", budgets, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["n_fits"] == 1 and 0.99 < status["spent"] <= 1.0
    with pytest.raises(SystemExit, match="--budget-file is for the embedded cluster"):
        main(["train", f"{files}/train.csv", "--label", "y", "--bounds",
              f"{files}/bounds.json", "--budget-file", budgets, "--scheduler",
              "tcp://127.0.0.1:9"])
    import dask

    with dask.config.set({"scheduler-address": "tcp://127.0.0.1:9"}), \
            pytest.raises(SystemExit, match="DASK_SCHEDULER_ADDRESS"):
        main(["train", f"{files}/train.csv", "--label", "y", "--bounds",
              f"{files}/bounds.json", "--budget-file", budgets])


def test_warnings_are_one_line_each_and_bounds_csv_may_lack_its_header(files, cluster,
                                                                        tmp_path, capsys):
    """Issue 43, item 5: every run printed its warnings with a line of the package's source,
    and a bounds CSV without its header was refused."""
    (tmp_path / "bounds.csv").write_text("a,-4,4\nb,-4,4\nc,-4,4\n")
    assert main(["train", f"{files}/train.csv", "--label", "y", "--bounds",
                 str(tmp_path / "bounds.csv"), "--n-estimators", "3", "--quiet",
                 "--reproducible-noise", "--seed", "5", "--scheduler",
                 cluster.scheduler_address, "--out", str(tmp_path / "m.json")]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert any("PrivacyLeakWarning: reproducible_noise=True" in line for line in lines)
    assert all(re.match(r"dpxgb: \w+(Warning|Error): ", line) for line in lines), lines
