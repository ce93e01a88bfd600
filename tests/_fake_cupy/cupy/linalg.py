from numpy.linalg import *  # noqa: F401,F403
from numpy.linalg import lstsq  # noqa: F401
