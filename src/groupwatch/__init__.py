"""groupwatch: is every Kafka consumer group's partition assignment correct right now?"""

__version__ = "0.1.0"
