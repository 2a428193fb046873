"""Bad input catalogue: every case must exit with status 1 (not a signal),
print a one-line ERROR naming the problem on stderr, leave nothing in the
output folder (no output, no temporary) and leave the inputs untouched."""
import numpy as np
import pytest

ND = -9999.0

VALID_GGVRT = """<GGVRTDataset operation="multilook">
  <Option name="looks">4x4</Option>
  <Input relativeToVRT="1">in.tif</Input>
</GGVRTDataset>
"""

# id -> (argv with {in} {indir} {out} placeholders, keywords that one ERROR line
# must all contain; "a|b" accepts either word)
CASES = {
    "missing-input": (["gdal_multilook", "-looks", 2, 2, "{indir}/nosuch.tif", "{out}"], ["nosuch.tif"]),
    "missing-input-gg": (["gdal_translate", "GG:multilook:looks=2x2:{indir}/nosuch.tif", "{out}"],
                         ["nosuch.tif"]),
    "ot-cfloat32-multilook": (["gdal_multilook", "-looks", 2, 2, "-ot", "CFloat32", "{in}", "{out}"],
                              ["CFloat32"]),
    "ot-cfloat32-radnorm": (["gdal_radnorm", "-coef", 35, "-ot", "CFloat32", "{in}", "{out}"], ["CFloat32"]),
    "ot-nonsense": (["gdal_rotate", "-angle", 30, "-ot", "Nonsense", "{in}", "{out}"], ["Nonsense"]),
    "looks-too-large-x": (["gdal_multilook", "-looks", 38, 2, "{in}", "{out}"], ["looks"]),
    "looks-too-large-y": (["gdal_multilook", "-looks", 2, 30, "{in}", "{out}"], ["looks"]),
    "looks-too-large-gg": (["gdal_translate", "GG:multilook:looks=100x100:{in}", "{out}"], ["looks"]),
    "looks-zero": (["gdal_multilook", "-looks", 0, 2, "{in}", "{out}"], ["looks"]),
    "looks-abc": (["gdal_multilook", "-looks", "abc", 2, "{in}", "{out}"], ["looks|abc"]),
    "levels-one": (["gdal_radnorm", "-coef", 35, "-levels", 1, "{in}", "{out}"], ["levels"]),
    "levels-256": (["gdal_radnorm", "-coef", 35, "-levels", 256, "{in}", "{out}"], ["levels"]),
    "gg-levels-256": (["gdal_translate", "GG:radnorm:coef=35:levels=256:{in}", "{out}"], ["levels"]),
    "angle-nan": (["gdal_rotate", "-angle", "nan", "{in}", "{out}"], ["angle"]),
    "scale-zero": (["gdal_rotate", "-angle", 30, "-scale", 0, "{in}", "{out}"], ["scale"]),
    "scale-negative": (["gdal_rotate", "-angle", 30, "-scale", -1, "{in}", "{out}"], ["scale"]),
    "gg-bad-looks": (["gdal_translate", "GG:multilook:looks=abc:{in}", "{out}"], ["looks"]),
    "gg-unknown-op": (["gdal_translate", "GG:nosuchop:{in}", "{out}"], ["nosuchop"]),
    "gg-empty": (["gdal_translate", "GG:", "{out}"], ["GG:", "malformed|invalid|empty|missing|operation"]),
    "gg-scale-zero": (["gdal_translate", "GG:rotate:angle=30:scale=0:{in}", "{out}"], ["scale"]),
    "ggvrt-truncated": (["gdal_translate", "{indir}/truncated.ggvrt", "{out}"], ["truncated.ggvrt"]),
    "ggvrt-no-input": (["gdal_translate", "{indir}/noinput.ggvrt", "{out}"], ["Input"]),
    "ggvrt-missing-input-file": (["gdal_translate", "{indir}/dangling.ggvrt", "{out}"], ["gone.tif"]),
    "truncated-tif": (["gdal_multilook", "-looks", 2, 2, "{indir}/truncated.tif", "{out}"],
                      ["truncated.tif", "read"]),
    "truncated-tif-stack": (["gdal_insar", "{indir}/truncated_c.tif", "{indir}/c.tif", "{out}"],
                            ["truncated_c.tif", "read"]),
    # (windows small enough for the fit's least count: the read is what fails)
    "truncated-tif-coreg": (["gdal_coreg", "-window", 32, 32, "-search", 8, 8,
                             "{indir}/truncated_c.tif", "{indir}/c.tif", "{out}"],
                            ["truncated_c.tif", "read"]),
    "device-tpu": (["gdal_multilook", "-device", "tpu", "-looks", 2, 2, "{in}", "{out}"], ["tpu"]),
    "device-cuda-abc": (["gdal_multilook", "-device", "cuda:abc", "-looks", 2, 2, "{in}", "{out}"],
                        ["cuda:abc"]),
    "config-device-tpu": (["gdal_rotate", "--config", "GG_DEVICE", "tpu", "-angle", 30, "{in}", "{out}"],
                          ["tpu"]),
    "device-tpu-gg": (["gdal_translate", "--config", "GG_DEVICE", "tpu", "GG:radnorm:coef=35:{in}", "{out}"],
                      ["tpu"]),
}


@pytest.fixture
def folders(gg, make, rng, tmp_path):
    """An input folder (a 37x29 raster and hand-written .ggvrt files) and an
    empty output folder."""
    indir, outdir = tmp_path / "in", tmp_path / "out"
    indir.mkdir()
    outdir.mkdir()
    gg.write(indir / "in.tif", make.real(rng, nodata=ND), nodata=ND)
    (indir / "valid.ggvrt").write_text(VALID_GGVRT)
    (indir / "truncated.ggvrt").write_text(VALID_GGVRT[: VALID_GGVRT.index("<Input") + 10])
    (indir / "noinput.ggvrt").write_text(
        "\n".join(l for l in VALID_GGVRT.splitlines() if "<Input" not in l) + "\n")
    (indir / "dangling.ggvrt").write_text(VALID_GGVRT.replace("in.tif", "gone.tif"))
    # GeoTIFFs cut short: their last strips lie past the end of the file
    # (libtiff's message names no file: the utility's must)
    gg.write(indir / "full.tif", rng.random((64, 64)).astype(np.float32) + 1)
    z = (rng.standard_normal((128, 128)) + 1j * rng.standard_normal((128, 128))).astype(np.complex64)
    gg.write(indir / "c.tif", z)
    gg.write(indir / "full_c.tif", z * (1 + 0.1j))
    for name in ("", "_c"):
        data = (indir / f"full{name}.tif").read_bytes()
        (indir / f"truncated{name}.tif").write_bytes(data[: len(data) * 3 // 5])
        (indir / f"full{name}.tif").unlink()
    return indir, outdir


def test_valid_ggvrt_control(gg, folders):
    """Control for the .ggvrt cases: the unmutated hand-written file works."""
    indir, outdir = folders
    gg.run("gdal_translate", "-q", "--config", "GG_DEVICE", "cpu", indir / "valid.ggvrt", outdir / "ok.tif")
    out = gg.read(outdir / "ok.tif")[0]
    assert out.shape == (7, 9) and np.isfinite(out).any()


@pytest.mark.parametrize("case", CASES)
def test_bad_input(gg, folders, case):
    indir, outdir = folders
    argv, keywords = CASES[case]
    subst = {"in": str(indir / "in.tif"), "indir": str(indir), "out": str(outdir / "out.tif")}
    argv = [str(a).format(**subst) for a in argv]
    before = gg.snapshot(indir)
    p = gg.run(*argv, check=False)
    assert p.returncode == 1, (f"exit code {p.returncode} (expected 1)\nstdout:\n{p.stdout}\n"
                               f"stderr:\n{p.stderr}")
    errors = [l for l in p.stderr.splitlines() if l.startswith("ERROR")]
    assert errors, f"no ERROR line on stderr:\n{p.stderr}"
    def names(line, keyword):
        return any(k.lower() in line.lower() for k in keyword.split("|"))
    assert any(all(names(l, k) for k in keywords) for l in errors), (
        f"no ERROR line names the problem ({keywords}):\n{p.stderr}")
    assert "Traceback" not in p.stderr and "Segmentation" not in p.stderr
    assert sorted(x.name for x in outdir.iterdir()) == [], "output (or temporary) file left behind"
    assert gg.snapshot(indir) == before, "an input was modified or a file was added next to it"


UTILITY_CASES = [c for c in CASES if CASES[c][0][0] != "gdal_translate"]


@pytest.mark.parametrize("case", UTILITY_CASES)
def test_bad_input_keeps_existing_output(gg, folders, make, rng, case):
    """A failed run never touches an output that already exists."""
    indir, outdir = folders
    argv, _ = CASES[case]
    gg.write(outdir / "out.tif", make.real(rng, 5, 4))
    before = gg.snapshot(outdir)
    subst = {"in": str(indir / "in.tif"), "indir": str(indir), "out": str(outdir / "out.tif")}
    p = gg.run(*[str(a).format(**subst) for a in argv], check=False)
    assert p.returncode == 1, p.stderr
    assert gg.snapshot(outdir) == before, "the existing output was changed, or a file was left next to it"


@pytest.mark.parametrize("case", ["truncated-tif", "truncated-tif-stack", "truncated-tif-coreg"])
def test_one_error_line_for_a_bad_read(gg, folders, case):
    """A failed read is one ERROR line naming the file, not one per layer
    that passes it on."""
    indir, outdir = folders
    argv = [str(a).format(indir=indir, out=outdir / "out.tif") for a in CASES[case][0]]
    p = gg.run(*argv, "-device", "cpu", check=False)
    errors = [l for l in p.stderr.splitlines() if l.startswith("ERROR")]
    assert p.returncode == 1 and len(errors) == 1, p.stderr
