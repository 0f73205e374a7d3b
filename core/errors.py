"""One error tree for everything a researcher can act on."""


class LabError(Exception):
    """An error with a message a researcher can act on; the CLI prints it as one line and
    exits with `exit_code`."""

    exit_code = 1


class DataError(LabError):
    """A dataset file or record is malformed."""


class ConfigError(LabError):
    """The model registry (lab.toml) or a command-line value is invalid."""


class StoreError(LabError):
    """lab.db cannot be used as asked (newer schema, missing rows, duplicates)."""


class ModelError(LabError):
    """A model backend failed in a way the episode records as an error."""

    def __init__(self, message: str, reason: str = "model_error", retryable: bool = False):
        super().__init__(message)
        self.reason = reason
        self.retryable = retryable
