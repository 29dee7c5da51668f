"""Strict case reading (issue 24 item 7): a calibration case with a field FORMAT.md does not define (or a
misspelled one), an unknown release, a bad trainer or a missing figure is THAT case's error row naming the
field, and the folder's other cases still print their rows (exit 1, like a failed check). A case offloading on
a GPU without a catalog host link takes its own ``gpu.host_link_gb_per_s``, else its PCIe generation's default,
and its row says which. Every row says the trainer it was priced with.

Each test writes the public cases (instances/calibration) and one changed case to tmp_path.
"""

import json
import shutil

import pytest
from typer.testing import CliRunner

from planopt.cli import app
from planopt.models.catalog import defaults as d
from planopt.uncertainty.calibrate import calibrate_dir, sft_hours, load_case
from tests.support.common import INSTANCES

CAL = INSTANCES / "calibration"
PUBLIC = sorted(CAL.glob("*.json"))
PUBLIC_IDS = {json.loads(p.read_text())["id"] for p in PUBLIC}
STEP = json.loads((CAL / "nemo-rl-llama31-8b-16xh100.json").read_text())
# s1's case without its trainer block (PyTorch FSDP): the tests below state the trainer themselves
SFT = {k: v for k, v in json.loads((INSTANCES / "calibration-validation" / "sft-s1-32b-16xh100.json").read_text()).items()
       if k != "trainer"}
YOUNG_DALY = json.loads((CAL / "young-daly-3h.json").read_text())
runner = CliRunner()


def _strict_json(text: str):
    """The command's JSON, refusing NaN and Infinity (which json.loads would take)."""
    def refuse(token):
        raise ValueError(f"not JSON: {token}")
    return json.loads(text, parse_constant=refuse)


def _folder(tmp_path, case: dict, case_id: str) -> None:
    """The public cases and ``case`` (under ``case_id``) in tmp_path."""
    for p in PUBLIC:
        shutil.copy(p, tmp_path / p.name)
    case = {**json.loads(json.dumps(case)), "id": case_id}
    (tmp_path / f"{case_id}.json").write_text(json.dumps(case))


def _run(tmp_path, *extra: str) -> tuple[int, dict[str, list[dict]], str]:
    """Exit code, JSON rows by id, and the table of ``planopt calibrate tmp_path``."""
    res = runner.invoke(app, ["calibrate", str(tmp_path), "--json", "--no-intervals", *extra])
    rows: dict[str, list[dict]] = {}
    for row in _strict_json(res.stdout):
        rows.setdefault(row["id"], []).append(row)
    table = runner.invoke(app, ["calibrate", str(tmp_path), "--no-intervals"])
    assert table.exit_code == res.exit_code, table.output
    assert "Traceback" not in table.output + res.output
    return res.exit_code, rows, table.output


def _refused(tmp_path, case: dict, case_id: str) -> str:
    """The one-line error of ``case``'s row, after checking the folder exits 1 and still prints every good row."""
    _folder(tmp_path, case, case_id)
    code, rows, table = _run(tmp_path)
    assert code == 1, table
    for good in PUBLIC_IDS:
        assert good in rows, good
        for row in rows[good]:
            assert row["predicted"] is not None and "error" not in row and row["passed"], row
            assert good in table
    bad = rows[case_id]
    assert bad and all(r["predicted"] is None and r["ratio"] is None and r["passed"] is False for r in bad), bad
    (error,) = {r["error"] for r in bad}
    assert error.startswith("not read: ") and "\n" not in error
    assert f"{case_id} {bad[0]['figure']}: {error}" in table
    return error.removeprefix("not read: ")


def test_a_misspelled_top_level_field_is_an_error_row_with_did_you_mean(tmp_path):
    case = dict(STEP)
    case["tolerence"] = case.pop("tolerance")
    error = _refused(tmp_path, case, "typo-top")
    assert error.startswith("tolerence: not a field FORMAT.md defines") and "did you mean `tolerance`?" in error


def test_an_undefined_top_level_field_is_an_error_row(tmp_path):
    error = _refused(tmp_path, {**STEP, "url": "https://example.org/run"}, "extra-top")
    assert error.startswith("url: not a field FORMAT.md defines (predict = 'step_seconds')")


def test_a_misspelled_nested_field_names_its_dotted_path_and_the_close_name(tmp_path):
    gpu = dict(STEP["gpu"])
    gpu["hbm_tb"] = gpu.pop("hbm_tbps")
    error = _refused(tmp_path, {**STEP, "gpu": gpu}, "typo-gpu")
    assert error.startswith("gpu.hbm_tb: not a field FORMAT.md defines") and "did you mean `gpu.hbm_tbps`?" in error


def test_a_nested_field_put_at_the_top_level_is_pointed_to_its_block(tmp_path):
    error = _refused(tmp_path, {**SFT, "cpu_offload": True}, "offload-at-top")
    assert error.startswith("cpu_offload: ") and "did you mean `workload.cpu_offload`?" in error


def test_a_wrong_type_and_a_missing_figure_are_error_rows(tmp_path):
    error = _refused(tmp_path, {**STEP, "student": {**STEP["student"], "layers": "many"}}, "bad-type")
    assert error == "student.layers: expected a whole number, got 'many'"
    workload = {k: v for k, v in STEP["workload"].items() if k != "max_response_tokens"}
    error = _refused(tmp_path, {**STEP, "workload": workload}, "missing-figure")
    assert error == "workload.max_response_tokens: required field is missing"


def test_an_unknown_release_is_an_error_row(tmp_path):
    error = _refused(tmp_path, {**STEP, "software_release": "nemo-rl-v0.9"}, "unknown-release")
    assert error.startswith("software_release: expected 'nemo-rl-v0.5'") and "(got 'nemo-rl-v0.9')" in error
    assert "did you mean" not in error  # an unknown release is not a typo of the nearest known one


def test_a_cited_release_the_project_does_not_know_is_an_error_row_not_the_newest(tmp_path):
    # before: a source citing an unknown NeMo RL tag was priced as the newest release
    case = {**STEP, "source": "NVIDIA NeMo RL performance summary at tag v0.9.0"}
    error = _refused(tmp_path, case, "cited-release")
    assert error.startswith("software_release: none stated, and the source cites nemo-rl-v0.9")
    assert all(r in error for r in d.SOFTWARE_RELEASES)


def test_a_bad_trainer_backend_is_an_error_row_with_did_you_mean(tmp_path):
    error = _refused(tmp_path, {**STEP, "trainer": {"backend": "fsdp2"}}, "bad-backend")
    assert error.startswith("trainer.backend: expected 'megatron', 'fsdp' or 'deepspeed' (got 'fsdp2')")
    assert "did you mean `fsdp`?" in error


@pytest.mark.parametrize("trainer", [{"backend": "fsdp", "zero_stage": 3}, {"zero_stage": 2, "framework": "trl"}])
def test_zero_stage_without_deepspeed_is_an_error_row(tmp_path, trainer):
    error = _refused(tmp_path, {**SFT, "trainer": trainer}, "zero-not-deepspeed")
    assert error.startswith("trainer.zero_stage: ZeRO stages are DeepSpeed's")


@pytest.mark.parametrize("stage", [0, 4, 2.5, "3"])
def test_zero_stage_outside_one_to_three_is_an_error_row(tmp_path, stage):
    error = _refused(tmp_path, {**SFT, "trainer": {"backend": "deepspeed", "zero_stage": stage}}, "zero-out-of-range")
    assert error.startswith("trainer.zero_stage: ")


def test_a_misspelled_trainer_field_and_a_trainer_on_a_kind_that_does_not_train(tmp_path):
    error = _refused(tmp_path, {**SFT, "trainer": {"backend": "deepspeed", "zero_stag": 3}}, "typo-trainer")
    assert error.startswith("trainer.zero_stag: ") and "did you mean `trainer.zero_stage`?" in error
    error = _refused(tmp_path, {**YOUNG_DALY, "trainer": {"backend": "fsdp"}}, "reliability-trainer")
    assert error.startswith("trainer: not a field FORMAT.md defines (predict = 'checkpoint_interval_minutes')")


def test_every_row_says_its_trainer_and_a_stated_backend_is_priced_as_that_backend(tmp_path):
    stated = {**SFT, "trainer": {"backend": "deepspeed", "zero_stage": 3, "overlap_comm": False, "framework": "llamafactory"}}
    _folder(tmp_path, stated, "stated-trainer")
    (tmp_path / "plain.json").write_text(json.dumps({**SFT, "id": "no-trainer"}))
    (tmp_path / "framework.json").write_text(json.dumps({**SFT, "id": "framework-only", "trainer": {"framework": "trl"}}))
    code, rows, table = _run(tmp_path)
    assert code == 0, table
    (with_trainer,), (without,), (framework,) = rows["stated-trainer"], rows["no-trainer"], rows["framework-only"]
    assert with_trainer["trainer"] == "deepspeed ZeRO-3, overlap_comm false, llamafactory (priced as DeepSpeed ZeRO-3, collectives in series)"
    assert without["trainer"] == "default"
    assert framework["trainer"] == "trl (priced as default: no backend stated)"
    assert framework["predicted"] == pytest.approx(without["predicted"], rel=1e-12)
    # ZeRO-3's passes run at the sourced share of Megatron's speed, its collectives in series: slower than the default
    assert with_trainer["predicted"] > without["predicted"]
    assert rows["young-daly-3h"][0]["trainer"] is None and rows["llama3-405b-interruptions"][0]["trainer"] is None
    assert all(r["trainer"] == "default" for r in rows["tml-opd-qwen3-8b-flops"])
    assert "deepspeed ZeRO-3, overlap_comm false, llamafactory (priced as DeepSpeed ZeRO-3, collectives in series)" in table and "trainer" in table.splitlines()[0]


def _offload_sft(gpu: dict) -> dict:
    return {**SFT, "gpu": {**SFT["gpu"], **gpu}, "workload": {**SFT["workload"], "cpu_offload": True}}


def test_offload_on_an_unknown_gpu_takes_the_cases_host_link_and_says_so(tmp_path):
    _folder(tmp_path, _offload_sft({"name": "Mystery-1", "host_link_gb_per_s": 40.0}), "own-link")
    (tmp_path / "slow.json").write_text(json.dumps({**_offload_sft({"name": "Mystery-1", "host_link_gb_per_s": 10.0}),
                                                    "id": "slow-link"}))
    code, rows, table = _run(tmp_path)
    (own,), (slow,) = rows["own-link"], rows["slow-link"]
    assert own["predicted"] is not None and "error" not in own
    assert own["host_link"] == "40 GB/s per GPU, one direction: the case's gpu.host_link_gb_per_s"
    assert slow["predicted"] > own["predicted"]  # the host-link transfers are priced at the case's figure
    assert "own-link: host link 40 GB/s per GPU, one direction: the case's gpu.host_link_gb_per_s" in table
    assert all("host_link" not in r for rid in PUBLIC_IDS for r in rows[rid])  # no offload, no host link said


@pytest.mark.parametrize("name, generation", [("H800", 5), ("A800 80GB", 4), ("NVIDIA H20", 5)])
def test_offload_on_a_gpu_without_a_catalog_host_link_takes_its_generations_default(tmp_path, name, generation):
    # before: a GPU the catalog has no host-link figure for stopped the whole folder (exit 2)
    _folder(tmp_path, _offload_sft({"name": name}), "generation-link")
    code, rows, _ = _run(tmp_path)
    (row,) = rows["generation-link"]
    gb_per_s = d.HOST_LINK_GB_PER_S_BY_PCIE_GENERATION[generation]
    assert row["predicted"] is not None and "error" not in row
    assert row["host_link"].startswith(f"{gb_per_s:g} GB/s per GPU, one direction: the PCIe Gen{generation} x16 default")
    stated = tmp_path / "stated.json"
    stated.write_text(json.dumps({**_offload_sft({"name": name, "host_link_gb_per_s": gb_per_s}), "id": "stated"}))
    assert sft_hours(load_case(stated))[0] == pytest.approx(row["predicted"], rel=1e-12)


def test_the_catalogs_host_link_is_used_where_the_case_gives_none(tmp_path):
    _folder(tmp_path, _offload_sft({"name": "H100-SXM"}), "catalog-link")
    _, rows, _ = _run(tmp_path)
    assert rows["catalog-link"][0]["host_link"] == (
        f"{d.HOST_LINK_GB_PER_S_PER_GPU['H100-SXM']:g} GB/s per GPU, one direction: the catalog's H100-SXM")


def test_offload_where_no_host_link_is_known_is_an_error_row_naming_the_figure(tmp_path):
    error = _refused(tmp_path, _offload_sft({"name": "Mystery-1"}), "no-link")
    assert error.startswith("gpu.host_link_gb_per_s: required with workload.cpu_offload")
    assert "'Mystery-1'" in error


def test_json_with_intervals_carries_error_rows_and_trainer_notes(tmp_path):
    _folder(tmp_path, {**STEP, "trainer": {"backend": "fsdp2"}}, "bad-backend")
    res = runner.invoke(app, ["calibrate", str(tmp_path), "--json"])
    assert res.exit_code == 1, res.output
    rows = _strict_json(res.stdout)
    assert isinstance(rows, list) and {r["id"] for r in rows} == PUBLIC_IDS | {"bad-backend"}
    (bad,) = [r for r in rows if r["id"] == "bad-backend"]
    assert bad["interval"] is None and bad["error"].startswith("not read: trainer.backend: ")
    assert all("trainer" in r for r in rows)
    assert all(r["interval"] is not None for r in rows if r["id"] != "bad-backend")


def test_a_case_without_an_id_or_published_block_is_still_one_row_named_after_its_file(tmp_path):
    case = {k: v for k, v in STEP.items() if k not in ("id", "published")}
    (tmp_path / "anonymous.json").write_text(json.dumps(case))
    (row,) = calibrate_dir(tmp_path)
    assert row.id == "anonymous" and row.figure == "step_seconds" and row.published is None
    assert "id: required field is missing" in row.error and "published: required field is missing" in row.error


def test_a_file_that_is_not_json_still_stops_the_folder_with_exit_2(tmp_path):
    _folder(tmp_path, STEP, "fine")
    (tmp_path / "garbled.json").write_text("{not json")
    res = runner.invoke(app, ["calibrate", str(tmp_path), "--no-intervals"])
    assert res.exit_code == 2 and "garbled.json" in res.output
