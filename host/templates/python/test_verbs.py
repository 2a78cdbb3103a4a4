"""Unit tests of the verbs' logic under plain CPython: no component is built."""

import unittest

from verbs import VERBS, Failure, State


class VerbsTest(unittest.TestCase):
    def test_greet_greets_by_name(self):
        self.assertEqual(VERBS["greet"].run({"name": "Ada"}, State()), {"greeting": "Hello, Ada!"})

    def test_greet_refuses_a_blank_name_naming_the_field(self):
        with self.assertRaises(Failure) as caught:
            VERBS["greet"].run({"name": "  "}, State())
        self.assertEqual(caught.exception.code, "invalid-input")
        self.assertIn("name", caught.exception.message)
        self.assertFalse(caught.exception.input_fired)

    def test_count_counts_per_state(self):
        state = State()
        self.assertEqual(VERBS["count"].run({}, state), {"count": 1})
        self.assertEqual(VERBS["count"].run({}, state), {"count": 2})
        self.assertEqual(VERBS["count"].run({}, State()), {"count": 1})


if __name__ == "__main__":
    unittest.main()
