"""Writing Hudi log files (and, in later layers, tables) with morlog."""

from morlog.writers.core.logwriter import LogFileWriter, WriteResult, WrittenBlock, list_log_files

__all__ = ["LogFileWriter", "WriteResult", "WrittenBlock", "list_log_files"]
