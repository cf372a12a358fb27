"""groupwatch's development tooling: the local KRaft broker, the demo and the scenario library.

It sits above the product: it may import ``groupwatch``; ``groupwatch`` never imports it.
"""
