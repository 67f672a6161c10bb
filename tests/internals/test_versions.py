"""Canaries for `parallel_keras._internals.versions`: one absl warning when
the installed TensorFlow/Keras major.minor differ from those checked."""

from parallel_keras import _internals, testing
from parallel_keras._internals import versions


def test_checked_versions_are_tensorflow_and_keras():
    assert set(_internals.CHECKED_VERSIONS) == {"tensorflow", "keras"}


def test_only_a_different_major_minor_is_a_mismatch():
    checked = {"tensorflow": "2.21.0", "keras": "3.15.1"}
    assert versions.version_mismatches({"tensorflow": "2.21.3", "keras": "3.15.0"}, checked) == []
    assert versions.version_mismatches({"tensorflow": "2.22.0", "keras": "3.15.1"}, checked) == [
        "tensorflow==2.22.0 (checked 2.21.0)"]
    assert versions.version_mismatches({"tensorflow": "2.21.0", "keras": "4.0.0"}, checked) == [
        "keras==4.0.0 (checked 3.15.1)"]


def test_a_different_keras_is_warned_about_once_on_import():
    process = testing.run_python(
        """
        import keras
        keras.__version__ = "3.99.0"
        from parallel_keras import _internals
        print("AGAIN", _internals.warn_if_versions_differ())
        """,
    )
    assert process.stdout.split()[-2:] == ["AGAIN", "False"], process.stderr[-3000:]
    assert process.stderr.count("keras==3.99.0 (checked 3.15.1)") == 1, process.stderr[-3000:]
    assert "tensorflow==" not in process.stderr.split("Received:")[-1].split("\n")[0]


def test_the_checked_versions_are_not_warned_about():
    process = testing.run_python(
        """
        from parallel_keras import _internals
        print("INSTALLED", _internals.versions.installed_versions())
        """,
    )
    assert "relies on private TensorFlow/Keras behaviour" not in process.stderr
