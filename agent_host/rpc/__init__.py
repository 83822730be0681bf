"""The wire contract: method names, params/results, error codes, converter, schema.

Only the error codes exist so far; the methods arrive with the stdio server.
"""
