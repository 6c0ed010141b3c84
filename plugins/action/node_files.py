"""Action plugin: render a node's templates on the controller and lay them down in one module call.

The template and copy modules make a round trip (or two) per file; a Kafka
node has a dozen small files, a job's package as many, and a converge that
changes nothing would spend most of its time on those round trips. This
renders every template here, with the task's variables, reads every file
given as C(file) as it is, and hands the whole set to the node_files module,
which writes only what differs.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

try:  # ansible-core 2.19 marks template text as trusted explicitly
    from ansible.template import trust_as_template
except ImportError:  # pragma: no cover - older cores trust every string

    def trust_as_template(text):
        return text


# The options and return values are documented with the module of the same
# name (plugins/modules/node_files.py), which does the node's half.


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        files, contents = [], []
        for entry in self._task.args.get("files") or []:
            entry = dict(entry)
            src, extra = entry.pop("src", None), entry.pop("vars", None) or {}
            if src is not None:
                try:
                    path = self._find_needle("templates", src)
                except Exception as exc:  # noqa: BLE001  reported as the task's failure
                    raise AnsibleActionFail(f"node_files: template {src} not found: {exc}") from exc
                text = trust_as_template(self._loader.get_text_file_contents(path))
                templar = self._templar.copy_with_new_env(available_variables={**task_vars, **extra})
                contents.append(templar.template(text, escape_backslashes=False) or "")
            elif "file" in entry:
                contents.append(self._file_contents(entry.pop("file")))
            elif "content" in entry:
                contents.append(str(entry.pop("content")))
            else:
                raise AnsibleActionFail(f"node_files: {entry.get('dest')} needs src, file or content")
            files.append(entry)
        # The contents go apart, as a no_log argument: a file may hold a secret,
        # and the module's invocation is logged on the node.
        args = {
            "directories": self._task.args.get("directories") or [],
            "files": files,
            "contents": contents,
            "links": self._task.args.get("links") or [],
        }
        result.update(self._execute_module("stretch.kafka.node_files", module_args=args, task_vars=task_vars))
        return result

    def _file_contents(self, file):
        """A text file on the controller (a role's files/, or a path), as it is: never templated."""
        try:
            return self._loader.get_text_file_contents(self._find_needle("files", file))
        except Exception as exc:  # noqa: BLE001  reported as the task's failure
            raise AnsibleActionFail(f"node_files: file {file} cannot be read: {exc}") from exc
