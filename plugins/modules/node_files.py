"""Ansible module: lay down directories and files on a node, writing only what differs."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_files
short_description: "Internal: Lay down directories and files on a node in one round trip"
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Used by the roles; not a stable interface for playbooks of your own.
  - The module half of the node_files action, which renders the templates on the controller
    (a file given as C(src), a template, with the task's variables and its own C(vars)), reads a
    text file on the controller given as C(file) as it is, or takes a file's C(content) as given.
    Ensures each directory, then writes each file whose content differs (atomically, through a
    temporary file in the same directory) and sets owner, group and mode where they differ.
  - Supports check mode and diff mode.
options:
  directories:
    description: Directories to ensure, each C(path), C(owner), C(group), C(mode).
    type: list
    elements: dict
    default: []
  files:
    description:
      - Files, each C(dest), C(owner), C(group), C(mode), optional C(diff) (false for a file with secrets).
      - In the task, each also has C(src) (a template), C(file) (a file copied as it is) or C(content).
    type: list
    elements: dict
    default: []
  contents:
    description: The content of each file of I(files), in the same order. Never logged.
    type: list
    elements: str
    default: []
  links:
    description: Symbolic links to ensure, each C(path) and C(target).
    type: list
    elements: dict
    default: []
"""

EXAMPLES = r"""
- name: Write the node's configuration
  stretch.kafka.node_files:
    files:
      - {dest: /etc/kafka/jvm.env, owner: root, group: kafka, mode: "0640"}
    contents:
      - "KAFKA_HEAP_OPTS=-Xmx1g\n"
"""

RETURN = r"""
changed_files:
  description: The files written (or that would be, in check mode).
  returned: always
  type: list
  elements: str
changed_directories:
  description: The directories created or changed.
  returned: always
  type: list
  elements: str
changed_links:
  description: The links created or pointed elsewhere.
  returned: always
  type: list
  elements: str
"""

import difflib  # noqa: E402  the documentation blocks come first, as in every Ansible module
import grp  # noqa: E402
import os  # noqa: E402
import pwd  # noqa: E402
import tempfile  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402


def ids(owner, group):
    return pwd.getpwnam(owner).pw_uid, grp.getgrnam(group).gr_gid


def attrs_differ(path, uid, gid, mode):
    st = os.stat(path)
    return (st.st_uid, st.st_gid, st.st_mode & 0o7777) != (uid, gid, mode)


def ensure_directory(module, entry):
    path, mode = entry["path"], int(str(entry.get("mode", "0755")), 8)
    uid, gid = ids(entry.get("owner", "root"), entry.get("group", "root"))
    if os.path.isdir(path) and not attrs_differ(path, uid, gid, mode):
        return False
    if not module.check_mode:
        os.makedirs(path, exist_ok=True)
        os.chown(path, uid, gid)
        os.chmod(path, mode)
    return True


def ensure_file(module, entry, content, diffs):
    dest, content = entry["dest"], content.encode()
    mode = int(str(entry.get("mode", "0644")), 8)
    uid, gid = ids(entry.get("owner", "root"), entry.get("group", "root"))
    old = None
    if os.path.isfile(dest):
        with open(dest, "rb") as f:
            old = f.read()
    if old == content and not attrs_differ(dest, uid, gid, mode):
        return False
    if old != content and entry.get("diff", True):
        # A prepared unified diff: the whole content never appears in the
        # output, where Ansible would mask it as a no_log value.
        lines = difflib.unified_diff(
            (old or b"").decode(errors="replace").splitlines(keepends=True),
            content.decode(errors="replace").splitlines(keepends=True),
            dest if old is not None else "/dev/null",
            dest,
        )
        diffs.append({"prepared": "".join(lines)})
    if module.check_mode:
        return True
    if old == content:
        os.chown(dest, uid, gid)
        os.chmod(dest, mode)
        return True
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(dest), prefix=".node_files.")
    try:
        # The file gets its mode and owner before it holds anything, so a
        # secret is never readable by others, not even for a moment.
        os.fchown(fd, uid, gid)
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(content)
        os.replace(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return True


def ensure_link(module, entry):
    path, target = entry["path"], entry["target"]
    if os.path.islink(path) and os.readlink(path) == target:
        return False
    if not module.check_mode:
        tmp = f"{path}.node_files"
        if os.path.lexists(tmp):
            os.unlink(tmp)
        os.symlink(target, tmp)
        os.replace(tmp, path)
    return True


def apply(module, kind, entries, name_of, ensure):
    """Ensure each entry; return the names of those that changed, or fail naming the one that could not be."""
    changed = []
    for entry in entries:
        name = name_of(entry)
        try:
            if ensure(module, entry):
                changed.append(name)
        except (KeyError, OSError) as exc:
            module.fail_json(msg=f"{kind} {name}: {exc}")
    return changed


def main():
    module = AnsibleModule(
        argument_spec={
            "directories": {"type": "list", "elements": "dict", "default": []},
            "files": {"type": "list", "elements": "dict", "default": []},
            "contents": {"type": "list", "elements": "str", "default": [], "no_log": True},
            "links": {"type": "list", "elements": "dict", "default": []},
        },
        supports_check_mode=True,
    )
    files, contents = module.params["files"], module.params["contents"]
    if len(files) != len(contents):
        module.fail_json(msg=f"{len(files)} file(s) but {len(contents)} content(s)")
    diffs = []
    changed = {
        "changed_directories": apply(
            module, "directory", module.params["directories"], lambda e: e.get("path"), ensure_directory
        ),
        "changed_files": apply(
            module,
            "file",
            zip(files, contents, strict=True),
            lambda fc: fc[0].get("dest"),
            lambda m, fc: ensure_file(m, *fc, diffs),
        ),
        "changed_links": apply(module, "link", module.params["links"], lambda e: e.get("path"), ensure_link),
    }
    result = {"changed": any(changed.values()), **changed}
    if module._diff:  # noqa: SLF001  AnsibleModule's own diff flag
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
