"""compiler/addresses.py: which addresses are public, and the range that makes one not."""

from ipaddress import ip_address

import pytest

from compiler.addresses import forbidden_range, unmapped
from tests.support.outbound import NOT_PUBLIC, PUBLIC


@pytest.mark.parametrize(("address", "range_"), NOT_PUBLIC)
def test_an_address_that_is_not_public_is_named_by_its_range(address, range_):
    assert forbidden_range(ip_address(address)) == range_


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass_embedded_ones_judged_as_their_ipv4(address):
    assert forbidden_range(ip_address(address)) is None


def test_an_ipv4_mapped_address_is_connected_to_as_its_ipv4_address():
    assert unmapped(ip_address("::ffff:8.8.8.8")) == ip_address("8.8.8.8")
    assert unmapped(ip_address("2606:4700:4700::1111")) == ip_address("2606:4700:4700::1111")
    assert unmapped(ip_address("8.8.8.8")) == ip_address("8.8.8.8")
