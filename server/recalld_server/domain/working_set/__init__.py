"""Users' memories as the use cases see them.

In-process sets, the change writer, group commit and the cached profile.
"""
