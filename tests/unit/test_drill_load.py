"""A drill's load fails it on every write not confirmed: lost, reordered, failed with an error, or never answered."""

import pytest

from testkit.drill import Load, load_problems, writable_for

CLEAN = {"sent": 100, "acknowledged": 100, "lost": 0, "reordered": 0, "produce_errors": 0, "unconfirmed": 0,
         "produce_error_kinds": [], "dcs": {}, "latency_p99_ms": 10.0, "warmup_seconds": 5.0,
         "warmup_latency_p99_ms": 40.0, "longest_stall_seconds": 0.1}  # fmt: skip


class FinishedLoad:
    """A BackgroundLoad that has already run, with this report."""

    def __init__(self, report):
        self._report = report

    def stop(self):
        return ""

    def report(self):
        return self._report


def leave(report):
    """Leave a drill's `with Load(...)` block without an error, over a load that reported report."""
    load = Load.__new__(Load)
    load.label, load.figures, load.load, load.rtt = "a step", {"loads": {}}, FinishedLoad(report), None
    load.__exit__(None, None, None)
    return load.figures["loads"]["a step"]


@pytest.fixture(autouse=True)
def no_wait(monkeypatch):
    monkeypatch.setattr("testkit.drill.time.sleep", lambda seconds: None)


def test_a_clean_load_passes_the_drill():
    assert load_problems(CLEAN) == []
    assert leave(CLEAN) == CLEAN


@pytest.mark.parametrize(
    ("outcome", "problem"),
    [
        ({"produce_errors": 2, "acknowledged": 98, "produce_error_kinds": ["_MSG_TIMED_OUT"]},
         "2 write(s) failed with an error (_MSG_TIMED_OUT)"),
        ({"unconfirmed": 3, "acknowledged": 97}, "3 write(s) neither acknowledged nor reported failed"),
        ({"lost": 1}, "1 acknowledged record(s) lost"),
        ({"reordered": 1}, "1 record(s) reordered within a partition"),
        ({"acknowledged": 0, "sent": 0}, "no write was acknowledged"),
    ],
)  # fmt: skip
def test_a_write_that_was_not_confirmed_fails_the_drill(outcome, problem):
    report = {**CLEAN, **outcome}
    assert any(problem in p for p in load_problems(report)), load_problems(report)
    with pytest.raises(AssertionError, match=problem.split(" (")[0].replace("(", r"\(").replace(")", r"\)")):
        leave(report)


def test_a_report_without_a_count_fails_the_drill():
    report = {k: v for k, v in CLEAN.items() if k != "unconfirmed"}
    assert load_problems(report) == ["the load's report has no unconfirmed count"]


def test_a_lost_dc_s_lag_is_judged_risen_against_its_calm_quartiles_and_fallen_against_its_calm_highest():
    from testkit.drill import lag_rise_and_fall

    points = [(0, 120), (2, 150), (5, 130), (8, 140), (10, 130), (15, 480), (20, 620), (25, 0), (30, 0)]
    judged = lag_rise_and_fall(points, calm=(0, 10), lost=(11, 21), settled=(24, 30))
    assert judged == {"calm_q3": 145, "calm_iqr": 20, "calm_max": 150, "peak": 620, "climb": 140,
                      "settled_max": 0, "rose": True, "fell": True}  # fmt: skip
    # Lag that never came down, or a window the exporter left empty, is not shown.
    assert not lag_rise_and_fall(points[:7] + [(25, 700)], (0, 10), (11, 21), (24, 30))["fell"]
    assert not lag_rise_and_fall(points, (0, 10), (40, 50), (24, 30))["rose"]
    # Too short a calm to know its usual top, or one point while lost (no climb), shows nothing.
    assert not lag_rise_and_fall(points, (0, 6), (11, 21), (24, 30))["rose"]
    assert not lag_rise_and_fall(points, (0, 10), (11, 16), (24, 30))["rose"]


def test_one_slow_calm_batch_does_not_hide_the_rise_and_a_lag_that_does_not_climb_is_no_rise():
    from testkit.drill import lag_rise_and_fall

    # What CI saw: one slow batch lifted the calm lag to 1049; the waiting partitions' lag then climbed to 807.
    values = [376, 334, 466, 1049, 206, 385, 348, 501, 309, 309] + [376, 334, 466, 206, 206, 385, 348, 501, 309, 309]
    calm = list(zip(range(0, 40, 2), values, strict=True))
    lost = [(40, 436), (42, 495), (44, 459), (46, 639), (48, 807)]
    judged = lag_rise_and_fall(calm + lost, (0, 39), (40, 48), (50, 60))
    assert (judged["calm_max"], judged["peak"], judged["climb"], judged["rose"]) == (1049, 807, 371, True)
    # An exporter that dropped the waiting partitions (their lag gone at the kill) shows no rise,
    assert not lag_rise_and_fall(calm + [(t, 0) for t, _ in lost], (0, 39), (40, 48), (50, 60))["rose"]
    # nor one whose lag goes only as high as a calm saw-tooth does,
    assert not lag_rise_and_fall(calm + [(40, 206), (42, 300), (44, 440)], (0, 39), (40, 44), (50, 60))["rose"]
    # nor one above the calm's upper quartile that climbed no more than a calm saw-tooth swings,
    assert not lag_rise_and_fall(calm + [(40, 466), (42, 501), (44, 560)], (0, 39), (40, 44), (50, 60))["rose"]
    # nor one whose only high point is the one read at the kill, before any partition waited.
    assert not lag_rise_and_fall(calm + [(40, 700), (42, 300), (44, 350)], (0, 39), (40, 44), (50, 60))["rose"]


def test_the_panel_s_own_member_count_marks_the_lost_and_settled_windows():
    from testkit.drill import lag_rise_and_fall, loss_windows

    members = [(-5, 1), (0, 1), (5, 1), (10, 1), (15, 1), (20, 1), (25, 0), (30, 0), (35, 1), (40, 1)]
    lag = [(-5, 140), (0, 120), (5, 150), (10, 130), (15, 480), (20, 620), (25, 0), (30, 0), (35, 900), (40, 950)]
    lost, settled = loss_windows(members, killed_at=12, until=45)
    assert (lost, settled) == ((12, 20), (25, 30))
    # The restarted consumers' own lag (35 s on) is not the lost DC's lag coming back.
    judged = lag_rise_and_fall(lag, (-5, 12), lost, settled)
    assert (judged["peak"], judged["settled_max"], judged["rose"], judged["fell"]) == (620, 0, True, True)
    # A panel that never showed the DC without a member shows no settled window: the lag is not shown to fall.
    lost, settled = loss_windows(members[:6], killed_at=12, until=45)
    assert (lost, settled) == ((12, 45), None)
    assert not lag_rise_and_fall(lag[:6], (-5, 12), lost, settled)["fell"]
    # Nor did it fall while the panel still counted a member.
    assert loss_windows(members[:8], killed_at=12, until=45) == ((12, 20), (25, 45))


def test_a_topic_is_writable_in_kafkas_record_at_its_own_end_not_at_another_topics_relaxation():
    record = {"fenced": {"201": 100.5, "202": 101.25}, "min_isr_at": None, "relaxed_at": {"strict": 125.0}}
    assert writable_for(record, "load") == 101.25
    assert writable_for(record, "strict") == 125.0
    assert writable_for(dict(record, min_isr_at=110.0), "load") == 110.0
    assert writable_for(dict(record, min_isr_at=""), "load") == 101.25
    assert writable_for({"fenced": {}, "relaxed_at": {"load": 3.0}}, "load") is None
    assert writable_for({}, "load") is None
