import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "examples", "quickstart.py")
READMES = [os.path.join(HERE, "..", "README.md"), os.path.join(HERE, "..", "..", "..", "README.md")]


class ReadmeExampleTest(unittest.TestCase):
    """The README example is examples/quickstart.py, which the end-to-end test runs: one source."""

    def test_each_readme_shows_the_example_file_verbatim(self):
        with open(EXAMPLE, encoding="utf-8") as f:
            example = f.read()
        self.assertLessEqual(len(example.splitlines()), 10, "a ten-line example")
        for readme in READMES:
            with open(readme, encoding="utf-8") as f:
                self.assertIn("```python\n" + example + "```\n", f.read(), readme)


if __name__ == "__main__":
    unittest.main()
