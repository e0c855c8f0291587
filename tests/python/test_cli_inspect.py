"""`pterun inspect` prints correct metadata for every fixture."""

import json
import shutil
import subprocess
import sysconfig
import pathlib

import pytest

from conftest import FIXTURES, fixture_names, fixture_paths


def pterun_cli():
    scripts = pathlib.Path(sysconfig.get_path("scripts")) / "pterun"
    if scripts.exists():
        return str(scripts)
    found = shutil.which("pterun")
    assert found, "the pterun command is not installed"
    return found


def inspect(*args):
    return subprocess.run([pterun_cli(), "inspect", *map(str, args)], capture_output=True, text=True)


@pytest.mark.parametrize("name", fixture_names())
def test_inspect_json_matches_exporter(manifest, name):
    entry = manifest["fixtures"][name]
    pte, ptd = fixture_paths(entry)
    args = [pte, "--json"] + (["--data", ptd] if ptd else [])
    result = inspect(*args)
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    prog = entry["program"]
    assert got["format"]["extended_header"] == prog["has_extended_header"]
    assert got["format"]["constant_bytes"] == prog["constant_bytes"]
    assert got["format"]["segments"] == prog["num_segments"]
    assert got["format"]["file_size"] == prog["file_size"]
    methods = {m["name"]: m for m in got["methods"]}
    assert set(methods) == set(entry["methods"])
    for mname, expected in entry["methods"].items():
        m = methods[mname]
        assert m["operators"] == expected["operators"]
        assert m["delegates"] == expected["delegates"]
        assert m["memory_planned_buffer_sizes"] == expected["memory_planned_buffer_sizes"]
        assert m["num_instructions"] == expected["num_instructions"]
        for kind in ("inputs", "outputs"):
            assert len(m[kind]) == len(expected[kind])
            for g, e in zip(m[kind], expected[kind]):
                assert g["tag"] == e["tag"]
                if e["tag"] == "Tensor":
                    for key in ("dtype", "sizes", "dim_order", "shape_dynamism", "is_memory_planned", "nbytes"):
                        assert g[key] == e[key], (kind, key)


def test_inspect_text_for_people():
    result = inspect(FIXTURES / "cnn_channels_last.pte")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "method 'forward'" in out
    assert "float32[1, 3, 32, 32] dim_order=[0, 2, 3, 1]" in out
    assert "aten::convolution.out" in out
    assert "runs on cpu:" in out


def test_inspect_notes_what_cannot_run(tmp_path):
    raw = (FIXTURES / "xnnpack_mlp.pte").read_bytes()
    (tmp_path / "unknown.pte").write_bytes(raw.replace(b"XnnpackBackend", b"UnknownBackend"))
    out = inspect(tmp_path / "unknown.pte").stdout
    assert "UnknownBackend" in out
    assert "no delegate backend" in out
    out = inspect(FIXTURES / "xnnpack_mlp.pte").stdout
    assert "no delegate backend" not in out
    out = inspect(FIXTURES / "external_weights.pte").stdout
    assert "needs external data (.ptd)" in out


def test_inspect_errors_exit_nonzero(tmp_path):
    missing = inspect(tmp_path / "missing.pte")
    assert missing.returncode == 2 and "no such file" in missing.stderr
    bad = tmp_path / "bad.pte"
    bad.write_bytes(b"not a program at all")
    result = inspect(bad)
    assert result.returncode == 1 and "InvalidProgram" in result.stderr


XNNPACK_FIXTURES = FIXTURES / "xnnpack"


def xnnpack_fixture_names():
    with open(XNNPACK_FIXTURES / "manifest.json") as f:
        return sorted(json.load(f)["fixtures"])


@pytest.mark.parametrize("name", xnnpack_fixture_names())
def test_inspect_counts_xnnpack_nodes_by_type(name):
    with open(XNNPACK_FIXTURES / "manifest.json") as f:
        entry = json.load(f)["fixtures"][name]
    result = inspect(XNNPACK_FIXTURES / entry["files"]["pte"], "--json")
    assert result.returncode == 0, result.stderr
    (method,) = json.loads(result.stdout)["methods"]
    expected = entry["xnnpack"]["forward"]
    assert [d["delegate"] for d in method["xnnpack"]] == [d["delegate"] for d in expected]
    totals = {}
    for got, e in zip(method["xnnpack"], expected):
        assert "error" not in got, got["error"]
        assert got["nodes"] == e["node_counts"]
        assert got["num_nodes"] == e["num_nodes"]
        assert got["num_values"] == e["num_values"]
        assert got["num_constants"] == e["num_constants"]
        assert got["payload_bytes"] == e["payload_size"]
        for kind, n in e["node_counts"].items():
            totals[kind] = totals.get(kind, 0) + n
    assert method["xnnpack_nodes"] == totals

    text = inspect(XNNPACK_FIXTURES / entry["files"]["pte"]).stdout
    first = expected[0]
    assert f"XNNPACK delegate {first['delegate']}: {first['num_nodes']} nodes" in text
    for kind in first["node_counts"]:
        assert kind in text
