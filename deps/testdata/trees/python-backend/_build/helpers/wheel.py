def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    raise NotImplementedError


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    raise NotImplementedError
