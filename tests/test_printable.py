"""Names a learner chose, escaped for the instructor's terminal: control and bidirectional characters only."""

from grader.instructor.grading.printable import escape


def test_control_and_bidi_characters_are_escaped_and_nothing_else():
    assert escape("Müller 李明 Zoé-1") == "Müller 李明 Zoé-1"
    assert escape("\x1b]0;t\x07a\rb\x9b") == "\\x1b]0;t\\x07a\\x0db\\x9b"
    assert escape("abc\u202edef") == "abc\\u202edef"
    assert escape("a\\x1b") == "a\\\\x1b", "a backslash is doubled: an escaped name never reads as another"
    assert escape(None) == "" and escape(3) == "3"
