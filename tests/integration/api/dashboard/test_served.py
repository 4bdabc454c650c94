"""The page and its assets come from the data API itself, outside its OpenAPI document."""

import re

import httpx

from tests.support.http import http_client
from tests.support.page import PageWorld


async def test_the_page_and_every_asset_it_loads_are_served_from_this_origin(
    page_world: PageWorld,
) -> None:
    async with http_client(base_url=page_world.url) as http:
        page = await http.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert "default-src 'self'" in page.headers["content-security-policy"]
        # Every reference is a path on this server: nothing from another host.
        refs = [r for r in re.findall(r'(?:src|href)="([^"]+)"', page.text) if r != "data:,"]
        assert refs
        assert all(ref.startswith("/static/") for ref in refs)
        modules = ["/static/js/boot.js"]
        seen = set()
        while modules:
            path = modules.pop()
            seen.add(path)
            answer = await http.get(path)
            assert answer.status_code == 200, path
            assert "javascript" in answer.headers["content-type"]
            # Static imports (`import x from '...';`) and dynamic ones (`import('...')`).
            imports = re.findall(r"(?:^import .* from |\bimport\()'([^']+)'", answer.text, re.M)
            for imported in imports:
                target = str(httpx.URL(path).join(imported))
                assert target.startswith("/static/"), imported
                if target not in seen:
                    modules.append(target)
        assert "/static/vendor/uplot/uPlot.esm.js" in seen
        for ref in refs:
            assert (await http.get(ref)).status_code == 200, ref
        schema = (await http.get("/schema/openapi.json")).json()
    assert "/" not in schema["paths"]
    assert not [p for p in schema["paths"] if p.startswith("/static")]
    assert "/feeds/{feed_id}/streams/{stream_id}/data" in schema["paths"]
