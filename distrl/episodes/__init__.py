"""Episodes on disk: the format (``distrl.episodes.store``), written by runs and ``collect``, read back
as ``Trajectory`` records."""

from distrl.episodes.store import FORMAT_VERSION, EpisodeWriter, read_episode, read_episodes

__all__ = ["FORMAT_VERSION", "EpisodeWriter", "read_episode", "read_episodes"]
