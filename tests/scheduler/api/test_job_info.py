"""scheduler.api.job_info: input errors."""

import pytest

from scheduler.api.helpers import InputError
from scheduler.api.job_info import JobInfo
from tests.builders import podgroup


def test_bad_min_member_names_the_podgroup():
    bad = podgroup("g")
    bad["spec"]["minMember"] = "three"
    with pytest.raises(InputError, match="podgroup ns/g: spec.minMember"):
        JobInfo.from_podgroup(bad, {})
