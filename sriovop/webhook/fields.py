"""The tolerant field readers of the admission rules (`sriovop.policyrules.fields`), for the webhook's
other validators."""

from sriovop.policyrules.fields import (
           as_list,
           as_map,
           get_bool,
           get_int,
           get_map,
           get_str,
           get_str_list,
           get_str_map,
           loose_int,
           loose_str,
)

__all__ = ["as_list", "as_map", "get_bool", "get_int", "get_map", "get_str", "get_str_list", "get_str_map",
           "loose_int", "loose_str"]
