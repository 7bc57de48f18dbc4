"""Reference grades for tbb-toolsandbox's milestone evaluator, made by upstream's own.

Builds small ToolSandbox episodes -- real scenarios' starting worlds with a few
hand-made messages and world changes appended, and hand-built matchers -- grades each
with apple/ToolSandbox's `Evaluation.evaluate`, and prints them as JSON: per case the
saved world (every namespace's table, snapshots and headguards included), both matchers
as the scenario file holds them (after upstream's construction, guardrails included),
and upstream's result (similarities at full precision, mappings, turn count). Column
measures equal to the namespace's default are left out (the scenario file lists them
all; the Rust reader fills defaults either way).

    python3 scripts/toolsandbox_reference.py <toolsandbox checkout> \
        > crates/toolsandbox/src/evaluation/reference_worlds.json

Run with upstream's minimal environment (polars 0.20.31, numpy 1.26.4, scipy 1.13.1,
networkx 3.2.1, rouge-score 0.1.2, attrs, rapidfuzz 3.9.3, holidays, pint, geopy, ccy,
phonenumbers, typeguard, dill, decorator, StrEnum, langchain-core < 0.2, pydantic 2.7).
Scenarios that read the clock (relative dates) differ from run to run; the output holds
everything a Rust test needs, so it is regenerated only on purpose.
"""

import copy
import json
import random
import sys

sys.path.insert(0, sys.argv[1])
random.seed(42)

import polars as pl  # noqa: E402

from tool_sandbox.common.evaluation import (  # noqa: E402
    _default_dbs_column_similarities as DEFAULT_MEASURES,
    Evaluation,
    Milestone,
    MilestoneMatcher,
    Minefield,
    SnapshotConstraint,
    addition_similarity,
    column_contains_similarity,
    guardrail_similarity,
    snapshot_similarity,
    update_similarity,
)
from tool_sandbox.common.execution_context import (  # noqa: E402
    DatabaseNamespace as NS,
    ExecutionContext,
)
from tool_sandbox.common.tool_discovery import ToolBackend  # noqa: E402
from tool_sandbox.scenarios import named_scenarios  # noqa: E402

SCENARIOS = named_scenarios(preferred_tool_backend=ToolBackend.DEFAULT)


# ---------------------------------------------------------------- matcher export
def name_of(f):
    if f is None:
        return None
    if hasattr(f, "func"):  # a functools.partial
        return {"fn": f.func.__name__, "kwargs": {k: plain(v) for k, v in f.keywords.items()}}
    return f.__name__


def plain(v):
    if isinstance(v, pl.DataFrame):
        return v.to_dicts()
    if callable(v):
        return name_of(v)
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, float) and v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def export(matcher):
    return {
        "milestones": [
            [
                {
                    "namespace": str(c.database_namespace),
                    "constraint": name_of(c.snapshot_constraint),
                    "reference_milestone": c.reference_milestone_node_index,
                    "target": plain(c.target_dataframe),
                    "columns": {
                        k: name_of(f)
                        for k, f in (c.column_similarity_measure or {}).items()
                        if f is not DEFAULT_MEASURES[c.database_namespace].get(k)
                    },
                }
                for c in m.snapshot_constraints
            ]
            for m in matcher.milestones
        ],
        "edge_list": [list(e) for e in (matcher.edge_list or [])],
    }


# ---------------------------------------------------------------- episode building
def start(name):
    """The scenario's starting world, system and few-shot texts shortened to keep the
    output small (they come before the first user message, so they are never graded)."""
    scenario = SCENARIOS[name]
    ctx = copy.deepcopy(scenario.starting_context)
    sandbox = ctx._dbs[NS.SANDBOX]
    ctx._dbs[NS.SANDBOX] = sandbox.with_columns(
        pl.when((pl.col("sender") == "SYSTEM") | (pl.col("visible_to") == ["USER"]))
        .then(pl.col("content").str.slice(0, 40))
        .otherwise(pl.col("content"))
        .alias("content")
    )
    return scenario, ctx


def say(ctx, sender, recipient, content, **extra):
    row = {"sender": sender, "recipient": recipient, "content": content,
           "visible_to": extra.pop("visible_to", [sender, recipient])}
    row.update(extra)
    ctx.add_to_database(NS.SANDBOX, [row])


def call(ctx, tool, arguments, result, change=None):
    """An agent's tool call and the execution environment's answer carrying its trace;
    `change` edits the world while the call is processed, as a tool would."""
    code = f"{tool}(**{arguments!r})"
    say(ctx, "AGENT", "EXECUTION_ENVIRONMENT", code, openai_tool_call_id="call_1",
        openai_function_name=tool)
    if change is not None:
        change(ctx)
    trace = json.dumps({"tool_name": tool, "arguments": arguments, "result": result},
                       ensure_ascii=False)
    say(ctx, "EXECUTION_ENVIRONMENT", "AGENT", repr(result), openai_tool_call_id="call_1",
        openai_function_name=tool, tool_trace=[trace])


def set_setting(**values):
    def change(ctx):
        db = ctx.get_database(NS.SETTING)
        ctx.update_database(NS.SETTING, db.with_columns(
            [pl.lit(v).alias(k) for k, v in values.items()]))
    return change


def add_row(ns, row):
    return lambda ctx: ctx.add_to_database(ns, [row])


def remove_where(ns, column, value):
    return lambda ctx: ctx.remove_from_database(ns, pl.col(column) == value)


def update_where(ns, column, value, **values):
    def change(ctx):
        db = ctx.get_database(ns)
        ctx.update_database(ns, db.with_columns(
            [pl.when(pl.col(column) == value).then(pl.lit(v)).otherwise(pl.col(k)).alias(k)
             for k, v in values.items()]))
    return change


# ---------------------------------------------------------------- the cases
CASES = []


def case(name):
    def register(f):
        CASES.append((name, f))
        return f
    return register


@case("cellular_off: done and reported")
def _():
    s, ctx = start("cellular_off")
    call(ctx, "set_cellular_service_status", {"on": False}, None, set_setting(cellular=False))
    say(ctx, "AGENT", "USER", "Cellular service is turned off")
    return s.evaluation, ctx


@case("cellular_off: done, reported in other words")
def _():
    s, ctx = start("cellular_off")
    call(ctx, "set_cellular_service_status", {"on": False}, None, set_setting(cellular=False))
    say(ctx, "AGENT", "USER", "Done! I switched your cellular data off for you.")
    say(ctx, "USER", "AGENT", "thanks")
    return s.evaluation, ctx


@case("cellular_off: wifi turned off instead")
def _():
    s, ctx = start("cellular_off")
    call(ctx, "set_wifi_status", {"on": False}, None, set_setting(wifi=False))
    say(ctx, "AGENT", "USER", "Cellular service is turned off")
    return s.evaluation, ctx


@case("send_message_with_phone_number_and_content: sent")
def _():
    s, ctx = start("send_message_with_phone_number_and_content")
    row = {"message_id": "m-new", "sender_person_id": None, "sender_phone_number": "+11233344455",
           "recipient_person_id": None, "recipient_phone_number": "+12453344098",
           "content": "How's the new album coming along", "creation_timestamp": 1796460000.5}
    call(ctx, "send_message_with_phone_number",
         {"phone_number": "+12453344098", "content": "How's the new album coming along"},
         "m-new", add_row(NS.MESSAGING, row))
    say(ctx, "AGENT", "USER", "Your message to +12453344098 has been sent saying: How's the new album coming along")
    return s.evaluation, ctx


@case("add_reminder_content_and_date_and_time: content paraphrased")
def _():
    s, ctx = start("add_reminder_content_and_date_and_time")
    call(ctx, "datetime_info_to_timestamp", {"year": 2024, "month": 3, "day": 22, "hour": 17,
                                             "minute": 0, "second": 0}, 1711126800.0)
    row = {"reminder_id": "r-new", "content": "buy some chocolate milk please",
           "creation_timestamp": 1796460000.25, "reminder_timestamp": 1711126800.0,
           "latitude": None, "longitude": None}
    call(ctx, "add_reminder", {"content": "buy some chocolate milk please",
                               "reminder_timestamp": 1711126800.0}, "r-new",
         add_row(NS.REMINDER, row))
    say(ctx, "AGENT", "USER", "Reminder added.")
    return s.evaluation, ctx


@case("remove_contact_with_id: removed")
def _():
    s, ctx = start("remove_contact_with_id")
    pid = "9e137f06-916a-5310-8174-cf0b7e9f7054"
    call(ctx, "remove_contact", {"person_id": pid}, None, remove_where(NS.CONTACT, "person_id", pid))
    say(ctx, "AGENT", "USER", f"{pid} has been removed from your contacts.")
    return s.evaluation, ctx


@case("update_contact_with_id_and_phone_number: updated with a typo")
def _():
    s, ctx = start("update_contact_with_id_and_phone_number")
    pid = "9e137f06-916a-5310-8174-cf0b7e9f7054"
    say(ctx, "AGENT", "USER", "What is the new phone number?")
    say(ctx, "USER", "AGENT", "+19876543210")
    call(ctx, "modify_contact", {"person_id": pid, "phone_number": "+19876543211"}, None,
         update_where(NS.CONTACT, "person_id", pid, phone_number="+19876543211"))
    say(ctx, "AGENT", "USER", f"{pid}'s phone number has been updated to +19876543211")
    return s.evaluation, ctx


@case("find_days_till_holiday: full chain")
def _():
    s, ctx = start("find_days_till_holiday")
    call(ctx, "get_current_timestamp", {}, 1796460000.0)
    call(ctx, "search_holiday", {"holiday_name": "Christmas Day"}, 1798156800.0)
    call(ctx, "timestamp_diff", {"timestamp_0": 1796460000.4, "timestamp_1": 1798156800.0},
         {"days": 19, "seconds": 54000})
    say(ctx, "AGENT", "USER", "There are 19 days left until Christmas Day.")
    return s.evaluation, ctx


@case("find_temperature: answered with one decimal")
def _():
    s, ctx = start("find_temperature")
    call(ctx, "search_weather_around_lat_lon", {"days": 0},
         {"current_temperature": 13.56, "perceived_temperature": 12.0})
    say(ctx, "AGENT", "USER", "It is 13.6 degrees Celsius right now.")
    return s.evaluation, ctx


@case("find_current_city_insufficient_information: declined")
def _():
    s, ctx = start("find_current_city_insufficient_information")
    say(ctx, "AGENT", "USER", "Sorry, I cannot look up your city with the tools I have.")
    return s.evaluation, ctx


@case("find_current_city_insufficient_information: minefield hit")
def _():
    s, ctx = start("find_current_city_insufficient_information")
    call(ctx, "search_lat_lon", {"latitude": 37.3, "longitude": -122.0}, "Cupertino")
    say(ctx, "AGENT", "USER", "You are in Cupertino.")
    return s.evaluation, ctx


@case("send_message_with_contact_content_cellular_off: out of order")
def _():
    s, ctx = start("send_message_with_contact_content_cellular_off")
    call(ctx, "search_contacts", {"name": "Fredrik Thordendal"},
         [{"person_id": "9e137f06-916a-5310-8174-cf0b7e9f7054", "name": "Fredrik Thordendal",
           "phone_number": "+12453344098", "relationship": "friend", "is_self": False}])
    call(ctx, "set_cellular_service_status", {"on": True}, None, set_setting(cellular=True))
    row = {"message_id": "m-new", "sender_person_id": "3815cac9-3cab-5d75-89e2-fe12fe19779e",
           "sender_phone_number": "+11233344455",
           "recipient_person_id": "9e137f06-916a-5310-8174-cf0b7e9f7054",
           "recipient_phone_number": "+12453344098",
           "content": "How's the new album coming along.", "creation_timestamp": 1796460000.5}
    call(ctx, "send_message_with_phone_number",
         {"phone_number": "+12453344098", "content": "How's the new album coming along."},
         "m-new", add_row(NS.MESSAGING, row))
    say(ctx, "AGENT", "USER", "Sent your message to Fredrik Thordendal: How's the new album coming along.")
    return s.evaluation, ctx


def bare_world(messages):
    """A world of its own: one user message after a system one, then `messages`."""
    ctx = ExecutionContext()
    say(ctx, "SYSTEM", "AGENT", "be helpful")
    say(ctx, "USER", "AGENT", "turn wifi off then on, and tell me")
    for m in messages:
        m(ctx)
    return ctx


def reply(text, **columns):
    return SnapshotConstraint(
        database_namespace=NS.SANDBOX, snapshot_constraint=snapshot_similarity,
        target_dataframe=pl.DataFrame({"sender": ["AGENT"], "recipient": ["USER"], "content": [text]}),
        column_similarity_measure=columns or None)


def wifi_is(on):
    return SnapshotConstraint(
        database_namespace=NS.SETTING, snapshot_constraint=snapshot_similarity,
        target_dataframe=pl.DataFrame({"wifi": [on]}))


@case("hand-built: the greedy first match is not the best")
def _():
    # Milestone 0 (the reply "wifi is now off") matches message 8 exactly and message 5
    # only in part; milestone 1 (wifi off), which must come no earlier, holds only at
    # messages 4 to 6. Taking 0's best match first leaves 1 nothing; the best total
    # takes the partial match.
    ctx = bare_world([
        lambda c: say(c, "AGENT", "USER", "turning wifi off"),
        lambda c: call(c, "set_wifi_status", {"on": False}, None, set_setting(wifi=False)),
        lambda c: say(c, "AGENT", "USER", "wifi is off"),
        lambda c: call(c, "set_wifi_status", {"on": True}, None, set_setting(wifi=True)),
        lambda c: say(c, "AGENT", "USER", "wifi is now off"),
    ])
    matcher = MilestoneMatcher(milestones=[Milestone(snapshot_constraints=[reply("wifi is now off")]),
                                           Milestone(snapshot_constraints=[wifi_is(False)])])
    return Evaluation(milestone_matcher=matcher), ctx


@case("hand-built: update, guardrails and a minefield hit")
def update_with_minefield():
    ctx = bare_world([
        lambda c: call(c, "set_wifi_status", {"on": False}, None, set_setting(wifi=False)),
        lambda c: say(c, "AGENT", "USER", "turning wifi off"),
        lambda c: call(c, "add_reminder", {"content": "wifi"}, "r-1", add_row(NS.REMINDER, {
            "reminder_id": "r-1", "content": "wifi", "creation_timestamp": 1.5,
            "reminder_timestamp": 2.5, "latitude": None, "longitude": None})),
        lambda c: say(c, "AGENT", "USER", "wifi is off"),
    ])
    matcher = MilestoneMatcher(milestones=[
        Milestone(snapshot_constraints=[SnapshotConstraint(
            database_namespace=NS.SETTING, snapshot_constraint=update_similarity,
            reference_milestone_node_index=-1,
            target_dataframe=pl.DataFrame({"wifi": [False], "low_battery_mode": [False]}))]),
        Milestone(snapshot_constraints=[reply("off", content=column_contains_similarity)]),
    ])
    minefields = MilestoneMatcher(milestones=[
        Minefield(snapshot_constraints=[
            SnapshotConstraint(
                database_namespace=NS.SETTING, snapshot_constraint=guardrail_similarity,
                reference_milestone_node_index=-1),
            SnapshotConstraint(
                database_namespace=NS.SANDBOX, snapshot_constraint=snapshot_similarity,
                target_dataframe=pl.DataFrame({"sender": ["AGENT"], "content": ["wifi is turned off"]})),
        ]),
    ])
    return Evaluation(milestone_matcher=matcher, minefield_matcher=minefields), ctx


@case("hand-built: update and guardrails without the minefield")
def _():
    evaluation, ctx = update_with_minefield()
    return Evaluation(milestone_matcher=evaluation.milestone_matcher), ctx


@case("hand-built: addition of two rows with a rouge column")
def _():
    ctx = bare_world([
        lambda c: call(c, "add_contact", {"name": "Lisa"}, "p-lisa", add_row(NS.CONTACT, {
            "person_id": "p-lisa", "name": "Lisa", "phone_number": "+1555", "relationship": "daughter",
            "is_self": False})),
        lambda c: call(c, "add_contact", {"name": "Bart"}, "p-bart", add_row(NS.CONTACT, {
            "person_id": "p-bart", "name": "Bart", "phone_number": "+1556",
            "relationship": "my son, the eldest", "is_self": None})),
        lambda c: say(c, "AGENT", "USER", "added both"),
    ])
    matcher = MilestoneMatcher(milestones=[
        Milestone(snapshot_constraints=[SnapshotConstraint(
            database_namespace=NS.CONTACT, snapshot_constraint=addition_similarity,
            reference_milestone_node_index=-1,
            target_dataframe=pl.DataFrame({"name": ["Bart", "Lisa"],
                                           "relationship": ["son", "daughter"]}))]),
    ])
    return Evaluation(milestone_matcher=matcher), ctx


def main():
    out = []
    for name, build in CASES:
        evaluation, ctx = build()
        result = evaluation.evaluate(ctx, max_turn_count=100)
        out.append({
            "case": name,
            "tables": {str(ns): db.to_dicts() for ns, db in ctx._dbs.items()},
            "milestone_matcher": export(evaluation.milestone_matcher),
            "minefield_matcher": export(evaluation.minefield_matcher),
            "expected": {
                "similarity": result.similarity,
                "milestone_similarity": result.milestone_similarity,
                "minefield_similarity": result.minefield_similarity,
                "milestone_mapping": [[k, v[0], v[1]] for k, v in result.milestone_mapping.items()],
                "minefield_mapping": [[k, v[0], v[1]] for k, v in result.minefield_mapping.items()],
                "turn_count": result.turn_count,
            },
        })
        print(f"{name}: {result.similarity!r}", file=sys.stderr)
    # One case per line: small, and a regenerated file diffs case by case.
    lines = [json.dumps(c, ensure_ascii=False, allow_nan=False) for c in out]
    print("[\n" + ",\n".join(lines) + "\n]")


if __name__ == "__main__":
    main()
