"""The road to every cluster: the official ``kubernetes`` client, raw JSON where volume matters."""
