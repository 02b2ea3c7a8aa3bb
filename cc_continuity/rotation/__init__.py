"""The rotation domain: from a context reading to a successor that carries on.

(filled in as the protocol's steps move here)
"""
