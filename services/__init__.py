"""Engram services, one package each (mapped from services/)."""
