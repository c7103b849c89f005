"""Protocol types: the ControlEvent v2 types are real dataclasses, and importing
them does not load what a hook never uses (issue 2: keep the dataclasses, keep
the hot path from paying for anything it does not use)."""
import json
import subprocess
import sys

from hooks import ROOT


def fresh_python(code):
    """Run `code` in a new `python3 -I -S` process, as the hook command does."""
    prelude = "import sys, json; sys.path.insert(0, %r)\n" % ROOT
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", prelude + code],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout)


def test_importing_sts_leaves_inspect_and_copy_unloaded():
    seen = fresh_python("import sts\n"
                        "print(json.dumps(sorted(m for m in ('inspect', 'copy', 'ast', 'dis', "
                        "'tokenize') if m in sys.modules)))")
    if sys.version_info < (3, 12):
        assert seen == []
    else:  # dataclasses reads inspect.get_annotations for every class from 3.12 on
        assert "copy" not in seen


def test_the_control_event_types_are_full_dataclasses():
    out = fresh_python(
        "import sts, dataclasses\n"
        "event = sts.ControlEvent(kind='prompt.submit', session_id='s', prompt='hi')\n"
        "action = sts.Action(name='Read', mutability='read', affected_paths=['a'])\n"
        "print(json.dumps({\n"
        "  'all': [dataclasses.is_dataclass(t) for t in (sts.Action, sts.ActionResult, sts.ControlEvent)],\n"
        "  'fields': [f.name for f in dataclasses.fields(sts.ActionResult)],\n"
        "  'asdict': dataclasses.asdict(action)['affected_paths'],\n"
        "  'replace': dataclasses.replace(event, prompt='bye').prompt,\n"
        "  'eq': event == sts.ControlEvent(kind='prompt.submit', session_id='s', prompt='hi'),\n"
        "  'repr': repr(action)[:21],\n"
        "}))")
    assert out == {"all": [True, True, True],
                   "fields": ["id", "lifecycle", "agent_id", "agent_aliases", "ended_agent_ids",
                              "completed", "async_launched", "stamp_unknown"],
                   "asdict": ["a"], "replace": "bye", "eq": True,
                   "repr": "Action(name='Read', m"}


def test_inspect_works_as_usual_after_sts_is_imported():
    """A later `import inspect`, and dataclasses' own use of it, get the real module."""
    out = fresh_python(
        "import sts, dataclasses, inspect\n"
        "@dataclasses.dataclass\n"
        "class Undocumented:\n"
        "    a: int\n"
        "print(json.dumps({\n"
        "  'real': inspect.__spec__ is not None and sys.modules['inspect'] is inspect,\n"
        "  'signature': str(inspect.signature(sts.ActionResult)).split(',')[0],\n"
        "  'doc': Undocumented.__doc__,\n"
        "  'via_dataclasses': dataclasses.inspect.signature is inspect.signature,\n"
        "}))")
    assert out == {"real": True, "signature": "(id: 'str'", "doc": "Undocumented(a: int)",
                   "via_dataclasses": True}


def test_a_program_that_loaded_inspect_first_keeps_its_module():
    out = fresh_python(
        "import inspect, copy\n"
        "before = (id(inspect), id(copy))\n"
        "import sts\n"
        "print(json.dumps(before == (id(sys.modules['inspect']), id(sys.modules['copy']))))")
    assert out is True
