"""HFile, the file format of the metadata table's base files and HFile data blocks: the codec
(:mod:`~morlog.logformat.hfile.codec`: blocks, index, trailer, both writer styles) and the
records an HFile data block holds (:mod:`~morlog.logformat.hfile.content`); spec/mdt.md."""
