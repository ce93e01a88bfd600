def _get_arch():
    return "90"
