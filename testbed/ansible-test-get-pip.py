"""get-pip.py's job for ansible-test's sanity virtualenvs, from Python's ensurepip.

`ansible-test sanity` (make lint) runs most of its tests in a virtualenv of
their own (~/.ansible/test/venv), made without pip, and bootstraps pip into
each with get-pip.py, which it downloads from ci-files.testing.ansible.com
unless ~/.ansible/test/cache/get_pip_<pip version>.py is already there. That
address is not a package index: a machine that reaches only PyPI cannot fetch
it. testbed/setup-host.sh puts this file in that cache. It takes get-pip.py's
arguments (pip install's, and --no-setuptools, --no-wheel) and does its job:
the pip that ships with Python first, then, from the package index, what
ansible-test asked for (its pinned pip).
"""

import importlib.metadata
import subprocess
import sys

# get-pip.py's own options, which pip install does not take: each leaves a package out.
LEFT_OUT = {"--no-setuptools": "setuptools", "--no-wheel": "wheel"}


def installed(name):
    try:
        importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def main(argv):
    pip_args = [a for a in argv if a not in LEFT_OUT]
    # ensurepip in a process of its own: it turns pip's configuration off in the
    # process it runs in, and the install below needs the machine's (its CA bundle).
    subprocess.check_call([sys.executable, "-m", "ensurepip"])
    subprocess.check_call([sys.executable, "-m", "pip", "install", *pip_args])
    # ensurepip also installs setuptools before Python 3.12; get-pip.py leaves
    # out what it is told to, so the virtualenv holds only what ansible-test asked for.
    unwanted = [LEFT_OUT[a] for a in argv if a in LEFT_OUT and installed(LEFT_OUT[a])]
    if unwanted:
        subprocess.check_call([sys.executable, "-m", "pip", "uninstall", "--yes", "--quiet", *unwanted])


if __name__ == "__main__":
    main(sys.argv[1:])
