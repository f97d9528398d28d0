"""Test infrastructure that distrl's tests and benchmarks share: real peers on this machine, no mocks.

- ``distrl.testing.sshd``: a real OpenSSH ``sshd`` on loopback (``serve_sshd``, ``Sshd``), and the
  ``sshd`` pytest fixture that ``tests/conftest.py`` offers every test module;
- ``distrl.testing.netns``: network namespaces joined to this one by veth pairs, other machines on this
  one (``joined_namespace``; ``Namespace.shape`` limits a link's speed, ``Namespace.cut`` cuts it);
- ``distrl.testing.fake_emulator``: a fake Android ``emulator`` program that takes the real command
  line and serves one simulated phone behind it (``install`` puts it in an SDK folder, ``make_avd``
  writes an AVD);
- ``distrl.testing.judge_server``: an OpenAI-compatible chat-completions server on loopback, a judge
  whose verdicts, faults and delays the test chooses (``serve_judge``), or a program
  (``python -m distrl.testing.judge_server``);
- ``distrl.testing.slow_link``: a worker process behind a link that holds back weights messages, named
  as a host's ``python`` (``write_slow_python``).

It drives the parts it tests from the outside; no part of distrl imports it. ``sshd`` and ``netns`` need
pytest (the ``test`` extra): they skip or fail the test that uses them, with the reason.
"""
