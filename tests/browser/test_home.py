import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_home_page_shows_the_product_name_and_navigation(live_server, page):
    page.goto(live_server.url + "/")

    expect(page.locator(".brand")).to_have_text("Sluice")
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("link", name="Overview")).to_have_attribute("aria-current", "page")
    expect(page.get_by_role("heading", name="No scheduling cycle yet")).to_be_visible()


def test_login_link_leads_to_the_login_form(live_server, page):
    page.goto(live_server.url + "/")

    page.get_by_role("link", name="Log in").click()

    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    expect(page.get_by_label("Username")).to_be_visible()
