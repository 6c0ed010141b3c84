"""The job's package goes to a host as its files are, in one module call, and a second run changes nothing.

Through the real ansible-playbook, on this machine (a local connection), with
the spark_stream role's task shape: a file list from fileglob, turned into
node_files entries by the package_files filter, each read on the controller
as it is (never templated: Python source may hold braces that look like
Jinja).
"""

import grp
import os
import pwd
from pathlib import Path

from stretch.playbook import run as run_playbook

HERE = Path(__file__).resolve().parent
SOURCES = {
    "__init__.py": "",
    "job.py": 'TEMPLATE = "{{ not_a_variable }} {% raw %}"\nprint(f"{{literal}}")\n',
    "last.py": "x = 1",  # no newline at the end: it must stay so
}


def copy(tmp_path, src, dest):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  hosts:\n    localhost:\n      ansible_python_interpreter: '{{ ansible_playbook_python }}'\n"
    )
    owner, group = pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name
    return run_playbook(
        inventory, str(HERE / "playbooks" / "package_copy.yml"), timeout=120,
        package_src=str(src), package_dest=str(dest), package_owner=owner, package_group=group,
    )  # fmt: skip


def test_the_package_is_copied_as_it_is_and_a_second_run_changes_nothing(tmp_path):
    src, dest = tmp_path / "smoke", tmp_path / "host" / "smoke"
    src.mkdir()
    for name, text in SOURCES.items():
        (src / name).write_text(text)
    (src / "notes.txt").write_text("not a module")

    first = copy(tmp_path, src, dest)
    assert first.ok, first.stderr + first.text
    assert first.changed == 1
    assert sorted(p.name for p in dest.iterdir()) == sorted(SOURCES)
    for name, text in SOURCES.items():
        assert (dest / name).read_text() == text, name
        assert (dest / name).stat().st_mode & 0o777 == 0o644, name

    second = copy(tmp_path, src, dest)
    assert second.ok, second.stderr + second.text
    assert second.changed == 0

    (src / "job.py").write_text("changed = True\n")
    third = copy(tmp_path, src, dest)
    assert third.ok, third.stderr + third.text
    assert third.changed == 1
    assert (dest / "job.py").read_text() == "changed = True\n"
