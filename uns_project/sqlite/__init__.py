"""The SQLite database backend of the embedded mode (``ENGINE = "uns_project.sqlite"``): see ``base``."""
