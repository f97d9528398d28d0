"""Episodes on disk: the format (``distrl.episodes.store``: the trajectory in the records' JSON form,
screens as JPEG files; ``legacy``: format 1, read still), written by runs and ``collect``, read back as
``Trajectory`` records, shown by ``view`` and exported by ``export``."""

from distrl.episodes.store import FORMAT_VERSION, EpisodeWriter, read_episode, read_episodes

__all__ = ["FORMAT_VERSION", "EpisodeWriter", "read_episode", "read_episodes"]
