"""The one presentation vocabulary: formatters, labels and units, catalogs, charts."""
