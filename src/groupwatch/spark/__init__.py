"""The Spark shell around the pure core: the only package that imports pyspark or delta."""
