"""`cargo xtask mcp-check`: the official MCP Python SDK's stdio client against `lesson mcp`.

Usage: python mcp_check.py LESSON_BIN BANK

Initializes, lists tools, calls search, get and record, reads one lesson as a resource and gets
the lessons_for prompt, on the bank at BANK (a copy: record writes). Prints what it saw; exits
1 on any mismatch.
"""

import asyncio
import json
import os
import sys
from importlib.metadata import version

from mcp import Client, StdioServerParameters

EXPECTED_TOOLS = {"search", "get", "list", "review", "record", "propose", "lint"}
QUERY = "review the evidence of a lesson"
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        failures.append(what)


def field(obj, snake, camel):
    """An attribute by its snake_case name (SDK 2.x) or its camelCase one (SDK 1.x)."""
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


def is_error(result):
    return bool(field(result, "is_error", "isError"))


def structured(result):
    """A tool result's structured content (or its text parsed as JSON)."""
    content = field(result, "structured_content", "structuredContent")
    if content is not None:
        return content
    return json.loads(result.content[0].text)


async def main(binary, bank, mode):
    env = dict(os.environ)
    env["LESSON_BY"] = "mcp-check"
    env.pop("LESSON_DIR", None)
    params = StdioServerParameters(command=binary, args=["mcp", "--dir", bank], env=env)
    print(f"-- mcp {version('mcp')} (Python SDK), connection mode {mode}", flush=True)
    async with Client(params, mode=mode) as client:
        info = client.server_info
        check(info is not None and info.name == "lesson", f"initialized: server {info.name if info else None} {info.version if info else ''}, protocol {client.protocol_version}")

        tools = await client.list_tools()
        names = {t.name for t in tools.tools}
        check(names == EXPECTED_TOOLS, f"tools/list: {sorted(names)}")
        schemas = all(field(t, "input_schema", "inputSchema").get("type") == "object" for t in tools.tools)
        check(schemas, "every tool has a JSON Schema object input")

        found = await client.call_tool("search", {"request": QUERY, "role": "reviewer", "k": 3})
        hits = structured(found)["hits"] if not is_error(found) else []
        prompt = structured(found).get("prompt", "") if not is_error(found) else ""
        check(not is_error(found) and len(hits) > 0, f"search: {len(hits)} hits: {[h['slug'] for h in hits]}")
        check(bool(hits) and "similarity" in hits[0]["score"], "search: hits carry score parts")
        check(bool(prompt.strip()), f"search: prompt block of {len(prompt)} bytes")
        slug = hits[0]["slug"] if hits else "cite-evidence-by-id"

        got = await client.call_tool("get", {"slug": slug})
        g = structured(got)
        check(not is_error(got) and g["lesson"]["slug"] == slug, f"get {slug}: status {g.get('status')}, counts {g.get('counts')}")
        before = g["counts"]["success_count"] if not is_error(got) else None

        rec = await client.call_tool("record", {
            "slug": slug, "applied": "followed", "run_outcome": "success",
            "evidence": {"kind": "run", "ref": f"mcp-check-{mode}", "note": "checked by the Python SDK"},
        })
        r = structured(rec)
        check(not is_error(rec) and r["appended"] is True, f"record: {r.get('before')} -> {r.get('after')}")
        again = structured(await client.call_tool("get", {"slug": slug}))
        check(before is not None and again["counts"]["success_count"] == before + 1 and again["counts"]["backed_by_ledger"],
              f"get after record: success_count {before} -> {again['counts']['success_count']}, ledger {again['ledger']['outcomes']} outcomes")

        bad = await client.call_tool("get", {"slug": "no-such-lesson"})
        code = structured(bad).get("error", {}).get("code") if is_error(bad) else None
        check(is_error(bad) and code == "not_found", f"get of a missing lesson: isError, code {code}")

        resources = await client.list_resources()
        uris = [r.uri for r in resources.resources]
        check(len(uris) > 0 and all(str(u).startswith("lesson://") for u in uris), f"resources/list: {len(uris)} lessons")
        uri = f"lesson://{slug}"
        read = await client.read_resource(uri)
        text = read.contents[0].text
        on_disk = open(os.path.join(bank, f"{slug}.md"), encoding="utf-8").read()
        check(text == on_disk, f"resources/read {uri}: {len(text)} bytes, equal to the file")

        prompts = await client.list_prompts()
        check([p.name for p in prompts.prompts] == ["lessons_for"], f"prompts/list: {[p.name for p in prompts.prompts]}")
        got_prompt = await client.get_prompt("lessons_for", {"request": QUERY, "role": "reviewer"})
        block = got_prompt.messages[0].content.text
        check(block.strip() != "" and block.splitlines()[0] == prompt.splitlines()[0], f"prompts/get lessons_for: {len(got_prompt.messages)} message, {len(block)} bytes")


if __name__ == "__main__":
    binary, bank = sys.argv[1], sys.argv[2]
    modes = sys.argv[3:] or ["auto"]
    for mode in modes:
        try:
            asyncio.run(main(binary, bank, mode))
        except Exception as e:  # noqa: BLE001 - any failure is a failed check
            leaves = list(getattr(e, "exceptions", [])) or [e]
            while any(getattr(x, "exceptions", None) for x in leaves):
                leaves = [y for x in leaves for y in (getattr(x, "exceptions", None) or [x])]
            why = "; ".join(f"{type(x).__name__}: {x}" for x in leaves)
            check(False, f"client error ({mode}): {why}")
    if failures:
        print(f"{len(failures)} check(s) failed", flush=True)
        sys.exit(1)
    print("all checks passed", flush=True)
