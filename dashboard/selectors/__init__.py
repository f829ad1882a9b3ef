"""Reads for the pages, named ``<entity>_<action>``; views stay thin and call these."""
