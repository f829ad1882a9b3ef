"""scheduler.framework.session: the order jobs are taken in."""

from tests.builders import pod
from tests.scheduler.uthelper import Scenario, open_session


def test_ties_break_on_creation_time_then_uid():
    ssn, _ = open_session(Scenario(pods=[pod("b", created=1), pod("a", created=1), pod("z")]))
    ordered = sorted(ssn.jobs.values(), key=ssn.job_order_key)
    assert [j.name for j in ordered] == ["z", "a", "b"]
