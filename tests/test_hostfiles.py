"""embroker._hostfiles, the one home of "may this folder or file be used", as another local user
attacks it: folders made first, folders others can write, symlinks and hard links planted, a
FIFO where a file should be. The other user is ``nobody`` when the suite runs as root (as in
CI): its folders and files are really chowned to it."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from embroker._hostfiles import (
    UntrustedPath,
    append_file,
    private_folder,
    read_file,
    rewrite_file,
    temp_file,
    temp_folder,
    trusted_folder,
    user_folder,
    write_file,
)

NOBODY = 65534
as_root = pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0,
                             reason="another user's file needs root (chown)")


def test_a_folder_others_can_write_is_refused_at_any_level(tmp_path: Path) -> None:
    open_level = tmp_path / "open"
    (open_level / "mine").mkdir(parents=True)
    open_level.chmod(0o777)
    for path in (open_level, open_level / "mine"):
        with pytest.raises(UntrustedPath, match=rf"^{open_level} can be written by others "
                                                r"\(mode 0777\): .*; remove it"):
            trusted_folder(path)


def test_a_sticky_folder_is_passed_on_the_way_and_used_only_as_shared(tmp_path: Path) -> None:
    """/tmp is 1777: a folder in it may be used; itself only for files made new (``shared``)."""
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    assert private_folder(sticky / "mine") == sticky / "mine"
    assert stat.S_IMODE((sticky / "mine").stat().st_mode) == 0o700
    assert trusted_folder(sticky, shared=True) == sticky
    with pytest.raises(UntrustedPath, match="can be written by others"):
        trusted_folder(sticky)


@as_root
def test_a_folder_another_user_made_first_is_refused(tmp_path: Path) -> None:
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    planted = sticky / "embroker-0"
    planted.mkdir(mode=0o700)
    os.chown(planted, NOBODY, NOBODY)
    with pytest.raises(UntrustedPath, match=r"belongs to nobody \(uid 65534\), not to you"):
        private_folder(planted / "nodes")
    assert not (planted / "nodes").exists()


@as_root
def test_a_symlink_another_user_planted_on_the_way_is_refused(tmp_path: Path) -> None:
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    (sticky / "link").symlink_to(mine)
    assert trusted_folder(sticky / "link") == mine  # (the user's own link: followed, checked)
    os.lchown(sticky / "link", NOBODY, NOBODY)
    with pytest.raises(UntrustedPath, match=r"link is a symlink that belongs to nobody"):
        trusted_folder(sticky / "link")


def test_a_symlink_on_the_way_leads_to_levels_that_are_checked(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    elsewhere.chmod(0o777)
    (tmp_path / "link").symlink_to(elsewhere)
    with pytest.raises(UntrustedPath, match=rf"^{elsewhere} can be written by others"):
        trusted_folder(tmp_path / "link")


def test_user_folder_is_made_private_in_the_temporary_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(sticky))
    folder = user_folder("log")
    assert folder == sticky / f"embroker-{os.geteuid()}" / "log"
    for level in (folder.parent, folder):
        assert stat.S_IMODE(level.stat().st_mode) == 0o700
    made = temp_file("x-", ".log")
    assert made.parent == sticky
    assert stat.S_IMODE(made.stat().st_mode) == 0o600
    assert stat.S_IMODE(temp_folder("x-").stat().st_mode) == 0o700
    sticky.chmod(0o777)  # (a temporary folder others can write and rename in: refused)
    with pytest.raises(UntrustedPath, match=r"can be written by others .*TMPDIR"):
        temp_file("x-")


def test_read_file_ignores_what_cannot_be_trusted(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.write_bytes(b"data")
    good.chmod(0o600)
    assert read_file(good) == b"data"
    (tmp_path / "link").symlink_to(good)
    assert read_file(tmp_path / "link") is None
    (tmp_path / "open").write_bytes(b"x")
    (tmp_path / "open").chmod(0o666)
    assert read_file(tmp_path / "open") is None
    os.link(good, tmp_path / "second-name")
    assert read_file(good) is None  # (a hard link someone made to it)
    os.mkfifo(tmp_path / "fifo")
    assert read_file(tmp_path / "fifo") is None  # (and does not wait for a writer)
    assert read_file(tmp_path / "missing") is None
    (tmp_path / "big").write_bytes(b"x" * 100)
    assert read_file(tmp_path / "big", limit=10) is None


@as_root
def test_read_file_ignores_another_users_file(tmp_path: Path) -> None:
    planted = tmp_path / "planted"
    planted.write_bytes(b"{}")
    planted.chmod(0o600)
    os.chown(planted, NOBODY, NOBODY)
    assert read_file(planted) is None


def test_write_file_replaces_a_planted_symlink_never_its_target(tmp_path: Path) -> None:
    target = tmp_path / ".bashrc"
    target.write_text("keep\n")
    (tmp_path / "shim").symlink_to(target)
    write_file(tmp_path / "shim", b"new\n", mode=0o755)
    assert target.read_text() == "keep\n"
    assert not (tmp_path / "shim").is_symlink()
    assert (tmp_path / "shim").read_bytes() == b"new\n"
    assert stat.S_IMODE((tmp_path / "shim").stat().st_mode) == 0o755
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == [".bashrc"]


def test_append_file_never_writes_through_a_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    victim.chmod(0o600)
    (tmp_path / "sym.log").symlink_to(victim)
    with pytest.raises(UntrustedPath, match=r"sym.log is a symlink"):
        append_file(tmp_path / "sym.log")
    os.link(victim, tmp_path / "hard.log")
    with pytest.raises(UntrustedPath, match=r"hard.log has 2 names \(hard links\)"):
        append_file(tmp_path / "hard.log")
    assert victim.read_text() == "keep\n"
    with append_file(tmp_path / "new.log") as log:
        log.write(b"line\n")
    assert stat.S_IMODE((tmp_path / "new.log").stat().st_mode) == 0o600
    with append_file(tmp_path / "new.log") as log:
        log.write(b"more\n")
    assert (tmp_path / "new.log").read_bytes() == b"line\nmore\n"


def test_append_file_does_not_wait_on_a_planted_fifo(tmp_path: Path) -> None:
    """(Opened without blocking: no reader is ENXIO, a reader makes it "not a regular file".)"""
    os.mkfifo(tmp_path / "fifo.log")
    with pytest.raises((UntrustedPath, OSError)):
        append_file(tmp_path / "fifo.log")


@as_root
def test_append_file_refuses_another_users_file(tmp_path: Path) -> None:
    planted = tmp_path / "node.log"
    planted.write_text("")
    planted.chmod(0o666)
    os.chown(planted, NOBODY, NOBODY)
    with pytest.raises(UntrustedPath, match=r"belongs to nobody"):
        append_file(planted)


def test_rewrite_file_keeps_the_files_owner_and_mode_and_never_follows_a_link(
        tmp_path: Path) -> None:
    """A file a user named (an enabled-plugins file the machine's RabbitMQ reads too, an
    export): written in place, its mode kept; a symlink or a hard link planted there is
    refused and its target keeps its bytes; a missing file is made with the mode asked."""
    shared = tmp_path / "enabled_plugins"
    shared.write_text("[].\n")
    shared.chmod(0o640)
    rewrite_file(shared, b"[rabbitmq_management].\n")
    assert shared.read_text() == "[rabbitmq_management].\n"
    assert stat.S_IMODE(shared.stat().st_mode) == 0o640
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "link").symlink_to(victim)
    (tmp_path / "hard").hardlink_to(victim)
    for planted, problem in (("link", "is a symlink"), ("hard", r"has 2 names \(hard links\)")):
        with pytest.raises(UntrustedPath, match=problem):
            rewrite_file(tmp_path / planted, b"owned\n")
    assert victim.read_text() == "precious\n"
    rewrite_file(tmp_path / "new.json", b"{}", mode=0o600)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o600
