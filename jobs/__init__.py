"""The local job queue: grids → cells → jobs, Huey workers, the crash-safe ledger."""
