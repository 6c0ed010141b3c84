"""What a host must be beneath Kafka: a supported OS, kernel settings sized for the WAN, checksummed downloads."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.stretch.kafka.plugins.module_utils import kernel, platforms, releases

SUPPORTED = "the roles support Debian 12 (bookworm), Debian 13 (trixie)"


def facts(distribution, version, codename=""):
    return {"distribution": distribution, "distribution_major_version": version, "distribution_release": codename}


@pytest.mark.parametrize(
    ("found", "release"), [(facts("Debian", "12"), "debian-12"), (facts("Debian", "13"), "debian-13")]
)
def test_debian_12_and_13_are_supported_each_with_its_own_variables(found, release):
    assert platforms.problem("h1", found) == ""
    assert platforms.release(found) == release


@pytest.mark.parametrize(
    ("found", "message"),
    [
        (facts("Debian", "11", "bullseye"), f"h1 runs Debian 11 (bullseye): {SUPPORTED}"),
        (facts("Ubuntu", "24", "noble"), f"h1 runs Ubuntu 24 (noble): {SUPPORTED}"),
        (facts("RedHat", "9"), f"h1 runs RedHat 9: {SUPPORTED}"),
        ({}, f"h1: its operating system could not be read (distribution ?, version ?): {SUPPORTED}"),
        (
            facts("Debian", ""),
            f"h1: its operating system could not be read (distribution Debian, version ?): {SUPPORTED}",
        ),
    ],
)
def test_any_other_os_or_unread_facts_are_refused_naming_the_host(found, message):
    assert platforms.problem("h1", found) == message
    with pytest.raises(ValueError, match="not a release the roles support"):
        platforms.release(found)


def test_the_default_link_gets_buffers_of_twice_its_bandwidth_delay_product():
    # 10 Gbit/s at 30 ms: 37.5 MB in flight; twice that is 75 MB, 72 MiB rounded up.
    settings = kernel.settings({"bandwidth_mbit": 10000, "rtt_ms": 30})
    assert settings["net.core.rmem_max"] == settings["net.core.wmem_max"] == str(72 * 2**20)
    assert settings["net.ipv4.tcp_rmem"] == f"4096 131072 {72 * 2**20}"
    assert settings["net.ipv4.tcp_wmem"] == f"4096 16384 {72 * 2**20}"
    assert settings["vm.swappiness"] == "1"
    assert settings["vm.max_map_count"] == "262144"


def test_a_small_link_keeps_the_kernels_default_maxima():
    settings = kernel.settings({"bandwidth_mbit": 100, "rtt_ms": 1})
    assert settings["net.ipv4.tcp_rmem"] == "4096 131072 6291456"
    assert settings["net.ipv4.tcp_wmem"] == "4096 16384 4194304"


@given(st.floats(min_value=1, max_value=400_000), st.floats(min_value=0.1, max_value=1000))
def test_the_maxima_always_hold_twice_the_bandwidth_delay_product(bandwidth, rtt):
    link = {"bandwidth_mbit": bandwidth, "rtt_ms": rtt}
    settings = kernel.settings(link)
    bdp = bandwidth * 1e6 / 8 * rtt / 1e3
    for name in ("net.core.rmem_max", "net.core.wmem_max"):
        assert int(settings[name]) >= 2 * bdp
        assert int(settings[name]) % 2**20 == 0 or int(settings[name]) in (kernel.LINUX_RMEM_MAX, kernel.LINUX_WMEM_MAX)
    assert int(settings["net.ipv4.tcp_rmem"].split()[2]) == int(settings["net.core.rmem_max"])


@pytest.mark.parametrize(
    ("link", "message"),
    [
        ({"bandwidth_mbit": 0, "rtt_ms": 30}, "kafka_wan_link.bandwidth_mbit must be a positive number, not 0"),
        ({"bandwidth_mbit": -5, "rtt_ms": 30}, "kafka_wan_link.bandwidth_mbit must be a positive number, not -5"),
        (
            {"bandwidth_mbit": "fast", "rtt_ms": 30},
            "kafka_wan_link.bandwidth_mbit must be a positive number, not 'fast'",
        ),
        (
            {"bandwidth_mbit": math.nan, "rtt_ms": 30},
            "kafka_wan_link.bandwidth_mbit must be a positive number, not nan",
        ),
        ({"bandwidth_mbit": True, "rtt_ms": 30}, "kafka_wan_link.bandwidth_mbit must be a positive number, not True"),
        ({"bandwidth_mbit": 1000}, "kafka_wan_link.rtt_ms must be a positive number, not None"),
        ({"bandwidth_mbit": 1000, "rtt_ms": 30, "rtt": 30}, "kafka_wan_link has unknown key(s) ['rtt']"),
        ("10G", "kafka_wan_link must be a mapping with bandwidth_mbit and rtt_ms, not '10G'"),
    ],
)
def test_a_link_that_cannot_size_buffers_is_refused_naming_the_variable(link, message):
    problems = kernel.link_problems(link)
    assert any(p.startswith(message) for p in problems), problems
    with pytest.raises(ValueError, match="kafka_wan_link"):
        kernel.settings(link)


def test_only_the_settings_whose_value_differs_are_written():
    wanted = {"net.ipv4.tcp_rmem": "4096 131072 75497472", "vm.swappiness": "1", "vm.max_map_count": "262144"}
    current = {"net.ipv4.tcp_rmem": "4096\t131072\t75497472", "vm.swappiness": "60", "vm.max_map_count": None}
    assert kernel.plan(wanted, current) == {"vm.swappiness": "1", "vm.max_map_count": "262144"}


@pytest.mark.parametrize("name", ["", "net..core", "net/core/rmem_max", "../etc/passwd", "vm."])
def test_a_setting_name_that_is_not_a_sysctl_is_refused(name):
    with pytest.raises(ValueError, match="is not a sysctl name"):
        kernel.proc_path(name)


def test_the_boot_file_lists_the_settings_sorted_and_normalized():
    text = kernel.sysctl_file({"vm.swappiness": "1", "net.ipv4.tcp_rmem": "4096\t131072  8388608"})
    assert text.splitlines()[1:] == ["net.ipv4.tcp_rmem = 4096 131072 8388608", "vm.swappiness = 1"]


@pytest.mark.parametrize(
    ("checksum", "message"),
    [
        ("", "kafka_node_archive_checksum is empty"),
        ("md5:" + "0" * 32, "kafka_node_archive_checksum 'md5:"),
        ("0" * 128, "is not sha256:<hex> or sha512:<hex>"),
        ("sha512:" + "0" * 64, "not a sha512 digest: sha512:<128 hex digits>, found 64 characters"),
        ("sha256:" + "g" * 64, "not a sha256 digest: sha256:<64 hex digits>, found 64 characters"),
    ],
)
def test_a_checksum_that_cannot_verify_a_download_is_refused(checksum, message):
    assert message in releases.checksum_problem(checksum, "kafka_node_archive_checksum")


@pytest.mark.parametrize("checksum", ["sha256:" + "a" * 64, "sha512:" + "F" * 128])
def test_a_full_sha256_or_sha512_digest_is_accepted(checksum):
    assert releases.checksum_problem(checksum, "x") == ""
