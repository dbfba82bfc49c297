"""Browser tests: notebooks served by Voila, driven by Playwright in Debian's Chromium."""
