"""HOROVOD_* settings become MATEX_* ones (horovod/common/settings.py), checked
on copies of an environment without starting MPI: every mapped setting with
its conversion, a MATEX_* setting the user gave winning when equal and
failing when different, moot settings accepted, refused ones naming
themselves, and the stall shutdown default."""
import horovod.common.settings as settings
from hvd_test_util import expect_error

assert "matex_horovod" in settings.__file__, settings.__file__

env = {"HOROVOD_FUSION_THRESHOLD": "67108864", "HOROVOD_CYCLE_TIME": "3.6", "HOROVOD_TIMELINE": "/tmp/t.json",
       "HOROVOD_STALL_CHECK_TIME_SECONDS": "30", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "90",
       "HOROVOD_LOG_LEVEL": "WARNING", "HOROVOD_HIERARCHICAL_ALLREDUCE": "1"}
set_now = settings.apply(env)
expected = {"MATEX_FUSION_BYTES": "67108864", "MATEX_CYCLE_MS": "4", "MATEX_TIMELINE": "/tmp/t.json",
            "MATEX_STALL_WARNING_SECONDS": "30.0", "MATEX_STALL_SHUTDOWN_SECONDS": "90.0", "MATEX_LOG_LEVEL": "warn"}
for name, value in expected.items():
    assert env[name] == value, (name, env[name], value)
assert sorted(set_now) == sorted(expected), set_now

# A cycle time below a millisecond rounds up to matex's least; 0 stays 0.
for given, want in (("0.2", "1"), ("0", "0")):
    env = {"HOROVOD_CYCLE_TIME": given}
    settings.apply(env)
    assert env["MATEX_CYCLE_MS"] == want, (given, env["MATEX_CYCLE_MS"])
# The stall shutdown: Horovod's setting, else MATEX_TIMEOUT_SECONDS, else 600 s; never forever.
for env, want in (({}, "600"), ({"MATEX_TIMEOUT_SECONDS": "45"}, "45")):
    settings.apply(env)
    assert env["MATEX_STALL_SHUTDOWN_SECONDS"] == want, env
env = {"HOROVOD_STALL_CHECK_DISABLE": "1"}
settings.apply(env)
assert float(env["MATEX_STALL_WARNING_SECONDS"]) >= 1e6, env
# The user's MATEX_* value wins when it agrees, and a disagreement names both.
env = {"HOROVOD_FUSION_THRESHOLD": "1024", "MATEX_FUSION_BYTES": "1024"}
assert "MATEX_FUSION_BYTES" not in settings.apply(env)
expect_error(lambda: settings.apply({"HOROVOD_FUSION_THRESHOLD": "1024", "MATEX_FUSION_BYTES": "2048"}),
             "HOROVOD_FUSION_THRESHOLD", "MATEX_FUSION_BYTES=2048", kinds=(ValueError,))
expect_error(lambda: settings.apply({"HOROVOD_FUSION_THRESHOLD": "lots"}), "HOROVOD_FUSION_THRESHOLD='lots'",
             kinds=(ValueError,))
expect_error(lambda: settings.apply({"HOROVOD_STALL_CHECK_DISABLE": "1", "HOROVOD_STALL_CHECK_TIME_SECONDS": "5"}),
             "unset one", kinds=(ValueError,))
for name in settings.REFUSED:
    expect_error(lambda: settings.apply({name: "1"}), name, "not supported")
settings.apply({"HOROVOD_AUTOTUNE": "0"})  # switched off: nothing to refuse
print("settings map as documented", flush=True)
