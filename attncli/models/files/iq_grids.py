"""The lattice grids of llama.cpp's i-quants, as data: ggml-common.h's iq2xxs_grid, iq2xs_grid, iq2s_grid,
iq3xxs_grid, iq3s_grid, iq1s_grid.

Written by tools/iq_grids.py (from gguf-py 0.19.0, which carries llama.cpp's tables); do not edit. Each grid is
rows of 8 (iq2*, iq1s) or 4 (iq3*) values, stored as each value's index among the grid's levels (quants.py holds
the levels: 8, 25, 43 for iq2*, ...), one index a byte, zlib-compressed and base64-encoded.
"""

from __future__ import annotations

import base64
import zlib

import numpy as np

GRIDS: dict[str, tuple[tuple[int, int], tuple[str, ...]]] = {  # name -> (shape, packed indices)
    "iq2xxs": (
        (256, 8),
        (
            "eNqFVYuS7SAMEv7/o3cNEGOvc/fM6djamAeQdC396BW4N+gVC08DfgzpFcsHvgepFb832ublkFmZZzmEr69j4BMgjnk7PhdzX44x",
            "nY8A2Ba1xysgE5ipjPAR2gftx8/kTJBJlEmY2keVss0xkcIGCEqDL+R+H+k4s+DE6CvBSRehEqsKOjs6mwmUY5cBj4syG9B8gYzz",
            "85JPYIG/ABbDgmUCTlkgQL8BlnsbPQDnhnkAniuROvWFi4CKNIgQR2VcyqvIg5DulqgckQwxpU+vks0kZGr3SKyhPERVsYLrEIcV",
            "qKm1lDYJdUfslyJ2K6qR/YdoYxHxdOx1dQGs5oDXDB2B4CMU5xr5mwXA67rkW3FGVSWUS1B8CwuUIqKhuhsCi1L6xKfDJcrR6UpA",
            "edPtajvBeMHZPdcav+E5AmaErG6Jqou+4144wqH3WoYCX1oA5mQRJI5bgqchL2wkvf81Ank1hGJRf2kas0GATKwBvhqFeu5JNj87",
            "+Zx0AlFsM5JeXN3Va47KZsyS0ZCdGuQ1AXssGAXPXTp7+sOSNmZGkWbUozHda9G6p6ahrX16xse4GDDtUqCAQthyVvtUf3Vd/mHO",
            "gPbUoSToKluRP+WDBQc=",
        ),
    ),
    "iq2xs": (
        (512, 8),
        (
            "eNp1V4GW5DAICvz/R89UwWja7L6et502UQTMrJU/VATmDSpiYTxARXC+QEVgLoClBbQQFf+PjYWpCMyNsPi5IRX/T40EsDAS+b82",
            "EoIuJ0bF56meKBWfdHriVMTiZyFUfF7rhWHhu0BSn6vQS8G+noc7AFj4BAJLQByAPNt3QP7/kA2T1ZPxIg0wKkYVDcDY/QNIKgaM",
            "DVgsDIB5AO2tbkAbC18GHgufDXDKZyOQO1dDXNLZkIdGvTF0gxCUqEa5N87JFxUNytnI6Ao3lK/G8mQ6metmNPS3xquEFWUMRXAQ",
            "4b8NdT8ihopRmICTMG4WMAmEwcZNJJcKTGJhdGsTjCQ6pW6EM3TAJKB/TyL6zouQRUREpKLfdMq8EpWDsG6luWkOOIOTyM7IxcRi",
            "ndiRzia4M78SvQgetcR6bJWexOcpAMSL+VETglMhCiGERz70acIwdZ3y6twrt30Lx0hfhZOsrQ5cBcSMwBSSf09BuZOnsEB+CiwR",
            "ijcjIgEpJjAxei4OAXYT5jaLaFp+zszMAg2FarJRj1NY7gryT73FzcQ1h4uHQQnclWOO32LwKXwjhDkWoS2L8acxQO6JOcZeRuGb",
            "mGOmlHMaCOYYeBkJxObsyFbcaSxUxLTXMhqjgWlzpVxngWlbldvdkKbSXwaFIfdHa13GSQmt3Q0MU2avCQuod0iZsExg1ZboGSbd",
            "Q+y6vxrNShmY9KnUX0ZIDge7GSMmzAV2rrwNkucJQMgx1VDOeBon5jbJ1yxji7IbK6tK6m+i/Wdlg5ATrBkxfOjJ4WJjRpqEPFT1",
            "UPV8LHQ1cOVOn17SBDXdm7GHZ4WV6GgQjC+XoA2+yJzajQqQjAP2WTZMPxKkyLlydgNyPj0zv2b4a0UNChd2DgwfTlzwbXDYWW2O",
            "erEAsgJ4GTAbQBwDh2PwsPbqrrsBPgeTNq7Ob/fQMSOHzx5cUmQKLWdvIEz3tAbZSso5i3x61QTxqNMwsQl6vCx/klFMoZArQtwG",
            "owpi2adsMsup00YxI/feA9RML4exjFMrSdC8H0tQMdkpi2MwLiiWYkdJcOlD045rj/xGq2otOVusNtSKsVo7QZtsq0jA82S9v2qh",
            "CSSSzJxDGe5EP9yzLaGJXlein0fRPHIRbfDrsTqR+ecHQwYLBw==",
        ),
    ),
    "iq2s": (
        (1024, 8),
        (
            "eNqFmQF25DAIQy3uf+g2Nh8jZtLuvjy220lig5CEZ63zJzJK/h+RUUv2gcio8Bsio+QP0MoH5IMi4+/H7MGRUfIXaYW9MDIqfAGR",
            "8fcuW5CWvi7s98dzX+TPebHgyPjc1TcQGZ9l9g1pxdeNRcbn432jWrINR0aFJ0DKRET+vDIhIzGRUcq44muiuJ6H9cRp6WsCn/RE",
            "pqUnNDI+2+0JfrbRE/087jzHEx/rJF49+WyOl7WCRMadnVagvdpWqMi439IKFxl32VohI6OWrLCRcae/FToy7jS3pQGAyKhwQOy0",
            "nHXnViLvCwMMteECQJFRSwaoyLiX0wC2X6eTeLXUAbzIuD/WgBgZJQemVnwFaGSUErCRPy99BTClo9ZcCge25ACXHOhacsAnM+xU",
            "/dEAYJ7ccgGS1TcV+fLWKBvdcfoioafeQJFxV7k1VGTc2YzMXuRuI3fZGm//NrKtInmqQX02ZGTcsG0NuuHYGnTDJRImkXCwxg31",
            "VtoLaw2tJWvsWGENHqPRn7t7Ky4jL9UelrGoCqyARcZCysVdgqAUkhOGDP2gGHReIonVUQWKLnUsq9YlHMmJR5mlSUBARHJCIqf8",
            "haAi46GZS1iR8dDJJTDuJAWR8dDAJbbIeNr7Eh1vnIQHpE87XgJkZRAhKyT1YJKaHtjfHUyCPLC9O4Mw2eEbYdJicCI9TEZWJydI",
            "pBErTQHBksHVN12Lu8QbGU8aLxGT+UnIUAC3njTcCk3CpmKrcSG93Ymc3HJB7FR6EjwUxNIhfBAxiR+EvAkAW4czQdIUBJD1JgwP",
            "v3Xk0ZqhZjaacLBXLpC6epPGLclOVEPyFZgwZBcVNEpWKymaQAdMYaIjpkA9KnSeF38K1ZPcLlhIAlBCi+i41UW3XOAVNsg+0nXR",
            "oVPwACWgmMJ31OcKYKQA0uFTCOn1wuJyQUTiqiWWvgoklupNKEuD8u9ZaKRvjZSYLqT5idrS+SRMBLWHmrltgktPYVoQ+7ruGy/5",
            "NoGGTKZQn+R3wXZnDUVQAphyCjrMOYU9dttegceKXqGXCb42XK/wFzWtZkYbM09jcJN8foC5Sxp3OuJ0R/cOYBXjcB+xo3wsZQxl",
            "6CiDQUXlYyS9Vcqx3OSUEQEJ8vEO8SnFWU6KkFoZF5BUZODjVhkaikUxSGYly8eikgZaTz7GoOJzTEF1VVjxsaKoTj42FPLl40Ap",
            "6zRUdAhsC7vK7XsZLbkNr63RYdIwYDI7XNJIF8ntbRk0uY0tgwYa5HazoCq3k6VlcptYnS+3g5Xj5bauWnm5XcOelRGU264yhDDL",
            "sFfTTpVRlNujkjC5/Smmktua4uxpLKmB3H7UI6bh3GrfnNObAYUh5TJfS5rGVC7PrQU20La6dmdGJuXyWIyMR8JD4OSmwQV7Q+6m",
            "vN0TghcjDPPL5aVSXsXJRcrl4OOkIWl80veroUZx5DRZpV5Oc5PWSmvlNFZcspyWJg3VluT0UqZtGngUEfOAtZDTQJH18rYtklje",
            "jgVaQCZvq0oGL5G3R11zQJDD92NQkMOsWmkODnJYVO4egeuDhLx8ZUnlZSnoyNNdnmwOHrCcPD215zmQyLfzMZiAGvlrizrmwCL/",
            "9cfgwj/mABNbkT8HGZwRN2JBecAcdHjgHHjOMHNNOS/6bwDarva8P/pAxAKXnX7fAYlWZ+HMNGxgDk5sCC5iY+8DlZ/MYVJIAKJM",
            "IubARWLeBi/tLX0dwJprzYS0wYzEMhKQ4DmokfC3gY1CvA1uWFSKBKVWNU7HVSFLadLacO9OXRv0tpeN40l6wZd//cLXLTUIAgQo",
            "g6UwqxWSl31dUYMi3ABgwCo14ZoAQiEBEkqJuVp+nF5Ao7QArsTLj7ULiJAcgKTpuQpcWeQj53dQpUPzeLaADKUC6FLw1BAAvvpI",
            "3gC/umS2BgCyNMLyY71qDDSfBikuzCWytzso+wkyakpDoXY0VklEbpVGexusI5uK4s9BW6fbPgbuQs2yY4Nq3NptrpJJkIYux5Nm",
            "YZNgGxcPhx4O9CPlMALAMTG+LR/PiiDeBnkmUYiDlUEgc9AHc28D/yQapBnCmYN/2t8iorcDAJhi9S8tr/2qTEJg86AAQns7MDiH",
            "AZfw/jtAgAghmzib37TYiXEeMMRJZc24OtWs4TtXUScCSYt1AAHB8q0tdFbfUuaXEBDvPKgoKB1mKHN6Uhn3O0mOHFY/JYo8JeLm",
            "ebpx/wnBvx14HKTFvbKsJSWZhqgvX+uM6rxeZ4TJHq0jrPqYr7YtLT+Wf34AJIcXFw==",
        ),
    ),
    "iq3xxs": (
        (256, 4),
        (
            "eNpFkwsOBCEIQ/lz/xvvK06yYxpdV6GUamYWoIC7WYL1txnAk5k/c80aOCOBDgfwcOt4FwN4uVX/g2gUcH8BA3iGJVjgzQx64yIv",
            "UNIAHaw3CV1MZVXMXXApzhfnm/NNXtBtnWM1w/21AgOy1nz2GOejL8qiIxpXDGm8wBfyihNjfSoy4i3ESrc1tGnJal/x8QngmT4F",
            "hjUsGliDaC8wiOPb7A8hEKmeUFLHn4QnmqSaeEnR/xKLKvROTDHQUOok1AI0P5F13S/6E1wfWtOIQKZHXNWXvyYU6CxkBKi+QUer",
            "2Vdnl70NtIyuV6xd5a9otRLNsoe9r3nxNVCjSDJApbF5akOBhGCfYPpoFG0t9ujEdbJh3NkNM5/USETNxBAjN5xy1ckMsAB0schi",
            "lriSMAyYwBL8JkEXdDjijZOmqFA7fabCSSUHhFyQmo2GfQbDpSOEQ4fbfuyfUJSugYMgXNiYsFtydHvKlIOqe2JWGFltBtTIAD4a",
            "9InfgYJX4YidLtKsV7TtdVivATLLM5ShX2NgCK8zvNyoZGKmFwuBlWA2SQopU/eK9drwIpLM/gB6AApr",
        ),
    ),
    "iq3s": (
        (512, 4),
        (
            "eNpFlQmOhTAMQ5v9/jee54TRF7IKpWSzE957z4CDAvNuw4CDBP0dMFAggudkCxQYYHwcMtDsA8NQgvkM6nKQn3ED9TkJMMCCPZA4",
            "NZwW8Dnn+rrAfIEEaGDOvisofwk8eQYDjGBDAQ+rwGUW+CUBj+fASCZAg0z2i30wzbvh7FyyYfkGGEkn8CDpZB/YVwRFmKqiEylo",
            "EBTFsoipOMJeszesXGaNXdZoPmGdXgaUZYoJ5x40iOC52K8rqB0dll9x7cpnBeYrNmVRukZapnRwb7iXW8PkEmF3RFtrJYE598F+",
            "3IaIcpE1nJsjTVeBAQRpCVxEpluAKu6bvTljqiBZbJS6OGwDSIz4eE4YbZ6Ht6iOSmI598IgsfCMMFriKHbrAlPGYRcgZGOW++Le",
            "m5gaH6zZfNebAMxuhRQ5wVkFa/JMYoh1xWarDrEoBk58yjLXqpLnPUBSEpVkRKgrCa+Tgeh36FzBQp3XJ1zR8jZ7eecZa6Vikr5K",
            "4PkVFhO57OsELgAa94krNrr2ASToOdcAOlDqJov9IkVIhKNvDhFxhXcfSShpm0WnCBzJQ1pyT+PUSOFERQORCD5poix8so4aqvHV",
            "q0wK51WsLbWLbCru13BBYGh2g7NlWgzxxi5Yu9YL2o0wtpViJBS1Tf8Eoy5FtiEl2Ga0EqFpSRRKe66hpUCxoYt0ad4T2Fv14H4r",
            "EYpsPUt4HMQnXVrcj8LJFSOq2aKZLBUd1BkJNKHQHL6KqrASfWZFy8Cw0mmWJ2S0RjyzrKGzHSSaGiIANVDtpwpBAtnkjg61vSYX",
            "o3NbcYMR42qhUsRqiOIeSJKhKYx0kExKPRE3oKAJ+XM/vlNKTaRkpFIRrpIQ8Q4xhcInOWKAW5vciTVqNJL3pgDqvOhkgOGPSWaz",
            "bMEx8WjaEv125o7jHYRY4w3PGOs+g2pYFbA0nW2VLpZKraiWUyOHr4wLqW6RNcXnrQRQU2AXGfGGAyorNpkGgFJgK4tISxNIymTR",
            "SarRK96UgOkc9CiSmo/bbvz3XoxIurlRskbGChwFtKqJldZFTTlHMZAemmok03JA+XibvCMyQJhYrNbUf9kMIP4q35DP+zXusKde",
            "+t3s0NdvYj1oSPEBYoEWI3CNdddfZjS9W+ND40EdUP8NJwXGio2a8JeBUknJl0r8UD5+IPTudo1C+ANtqBTn",
        ),
    ),
    "iq1s": (
        (2048, 8),
        (
            "eNp1W4tWJEsIg/z/R+86lQTC6J7rxdaeflRBCAGr3j/QducPQNvV/H2egHMiaJsfaF2RHwRtN+JCOBcE7f/T4wY4N4Jv+Pnvc7fm",
            "8/Z6END+3PZzTPtz+ebH33nP/vz4c8wH734WfIH+XPFd8H2OxwDPL/A5sF8YtP9NLADOQoD25257YXAWCLQ/rweuN/hY4PO9Y8RC",
            "4iwoaH8uw/uC14kFx1l40PbZANB+noLffv4H2n4bgrMxLfvOfI//fo59C22YvuDvOzYStJ+PL0/8nPb5fdkj3yN3bHjTQsfo8GTQ",
            "diMcBLSzFM9ButNhQNt2HPC8Z6FjpGP9LBO4rr85Gmi7j+N9bvz8F+/67xi0nwehHyxH/fjBclgcx5VTcVF8Eo5Dg/az6yA+gKsJ",
            "Pv1yeBzHB+0HF1Yg4AQEaN/aEQ9WoHzcDAx0EAcwLivkadnWMSLAPtsDLj+4/OByv/uA148AxAlEfX2WYQUmToCCthmo/SLjPQ6f",
            "D1zHHbha+s/lVyAD+nlHYOMEOBToga7tYJQTHhRy6F+A6Bsd4c0t76UXavcGULzqFavgp6u4atsH9OygfTD0AGT/RkD1YKcfXry7",
            "CbB6XwG0AramhY7RkYkeDDAQ3+fBz/FJmKEa8WQvXF72AdcZzHTgxUD0BJ8LfB5wvUG02QAL2ud+8+YCXtA+N5ncSoxwbNUG1wXM",
            "AhcGeTEouE1c3OZiPAxZDzM7IIBvWugYPCbwv2XcCaDA50Rk+H62aT8P1ozmB4bYO69E0rJ4Vrlaj6hYlodoTfQFfQ/+nh4EeVIj",
            "EhSQHlazBN1ct+15OAmsaaFjJjQgPVUJrmmhY2TiE2TXbEEkRCgx2vM7EmXTQsfgMTKRgvblw4kgQQdzc8HHjA1+Ffg97fOQ53+b",
            "wUFMblyJCZq/p3XkMpFDCR38uawS/Huxh8cr4TctZEkAAFoSge4kAD8GC7P0jv2SjhFF4IdeoIAhEHKaipuTOGE+LKIB2gatQu0T",
            "UYwjMC4WIUGNjzeIahvxGjxvIL9XCIvICBlFaJoWOgaPkYSn34Y8PgY+LZ+bzwdeLwgRPfHxr/feEGfA8qnPBUF/WilLS9VIIgXa",
            "bhIr8Pjd6d2eHyZ0gRkAvO+zeLaiChtiJg4hbKmoHsD8PMRNpICsfEBYQVCbVQ7BwyF6YmOPLQ3xE5t5eXqIoNiGIbomR0xWVBYT",
            "pRviSJQ26lWgxmRKRTmjltEJRgMJ3cOG5RWYXTuEVG9FRDF2a41xCCtonYKYuUEi++gkSB9fpt5LCtqXl8H6bAgvDvEFrVKdiDCx",
            "hPmYfrAIck9ID4noeXImA4ItwcpBhdmUQ6xfPgXzKP1gn6Kcp70GgogrRcu1xGhEzFv2AYJX9qUXMJ2AS7AJ/LNN+xwDhOlhSiL6",
            "oH1wPJSBzJseR0zj+mIzLS1Fs0Aw86KFCoZHPRjqruAfLEwhgVNQqFYQd6hdNK1CQ+Tf1KYWaQHjfBUiOAUJTmGCU6CAlktnRqnC",
            "hZjqvVbqkGvIw9+2DgNVoQPatx2M46VYgAXQq7+4f2A8r8IIp0DSK9SK2V0o6cvUj4wYLKDeYzGOV0GFU1hpid7HptDCKbhAa+2i",
            "tupkecwyliK+U6bqP2QpJr0p2FzFVsg/XVHtTYmFI/MceedUOapmVMV8yzsdbN2yjSuKSllGcozkl5bs0imrSD5xRVK/yyhGRrGN",
            "YlbPbG+Z48oY5pKUJyw/CGmFWkc2kDzwoGcVtCzL22JqZ3lsESDL11u2+oxTjrriEuKf8rNFPkQKkGWnt1ygL3CuDSqrbDzloksj",
            "QUNnudenvDM3FFdRblBM9inMT5nlVFNZPnllTnnkAt5lUUU506d8cZkCF/pRlqj88CudcsLlQ2eZoDKARHbKAEudtwxImu9a4A/6",
            "LtpuJVYSWR+6XknPW/T80HDRbjODTlo9lblKAsjjgh5f+tukvVMyyxVEV0VTyRVQQR8NPZ30UDTQHn7pn0vzpG9ftM3JS2B86BYI",
            "Bla4k1a5Vjs0aujToUtKoQqFQ48uLRIdshBEOiT606I9ojeXxhz60tQ5TV+kmJCuNOnKq1pWLV2/04Cb7p3emYmUvo0oTJ83PZ4u",
            "01eatMiv2qyzi6Luh0XOzrRlqKlMR33Sj4tWpQ2c9CASa0EsVGCpuJMGBP+1tenvNGAQ7VAbR2DrI7TJaY4KaNjuhOc+cGwfrIRd",
            "u2olvF447QOfVsgq4bEPHAruRgKrgKc+cCQYGvghzODAiqvdCrj4Cw6c4xXOorJ9BMYThq4+GF4KK7Pw+j08+oTDyoDh3k51lW5q",
            "96xgO27CuLaq393PGbbTnYw9x23sA5Vu0Ge7+2yvtxW5vX2201njCqkqJTq3o8/y32Xvr+Um2mhZkcvbfZaxc7n6LI9DovO1+7yO",
            "k1XlY/txOx+rz+29S+fyduo+QnHnj/1p/cMRkvUDIDulOqE6T8QRnvVBnAtUnwuBUh9SqO4jWOtGOAL2vXF1PgDOg0joppLISp10",
            "g/u8hfBGPnh1vkAtrXIL5b00IDHH/cLUqS2o/7UA4l61cj3oHlt474U9G3q1cDjCvBYSZ0Grz8JSuJfS0iPFhpBPyYh873sjwI1A",
            "ITYEtAX+nFYNgd497rVhahT0aRRo416tPRtXu9m1NrI6NxSn0dCn4QCJ850bj8oNr6FgsfF1Nx7ZUZGCJUeQNNKngdG7qNiO0ukY",
            "1ekgOI5SG6wXZaxOB8JpjOgLx7Gq08FwHa3cepJjheNVpwPqEtTv39FyTM+aHAeFeh/HQfGHo6ox07LV4cB6hVrvvJVDIQ2FvEeL",
            "18gI6Pii4AoAnvpULjBOIiBqTS/BQyY3INw4qo7A0JJXTJ1MwFRMi2CaF085s3hKfd/iU61Zk+nak2X+EnhWUPuPQMTvAYkbmNsZ",
            "tGirEgYDFDdAa3dh3G1x6a7ugboFFao6XPP2cllsTLiBXVvNXIEe6tgEunuK6OhcathEQFBLW9rAUKuW2kBRnYCBAxwQltEXUAhA",
            "KWeeXRWPpKbSsaIadbXprcgqEa4SLa5GFTWzLhfAcICsOgEMB8gqWNhwzA7y8A1w1Ql0OIAHOeVI0r8CIA4QQrYQwEjUcENTHQS3",
            "LtqTXfR+emV42Wi/fRqhksy1itUJtPlW8FPVAd6n84CNfJAXTIsfsBLEMzsarlqCKkQDFrLQMYEd7R6PNF8PbyzAF/a66Y3DUE5D",
            "V08qEd0ids1MxE4MtXo4Fi9WA9ijfX7zbAyr+KlNqjGpTK5QJ8E4KRC81VDGH4mnhmllIqo1k0CxEEtDlxKnBFXVkahqXWordmZw",
            "0A6WSm7wc+DnsHe4cgzZjW6chjdO41u9FzHEM97rxriGTW7CrBzDdeNcLaM+DXScRrqaOmagtUTrGXulKKqprEnMEmfUYqwcV3Xi",
            "RscYqhN55Xjpd0JHNvQVQTfBV453ugWulpmYdOV4pnuG6n1Jq5EyO4QBMSiAMzCgllyfwQGcAQKcQQITjopxP3UPTDzk8mcMzzEk",
            "CciEpEKtc5NDBMWidU9Pco2HwapLx7iXNazKMS0jl6Adh+gIUyvI4Ez2VI4/aezJrSol2z6DEQILLY4Q0+NAYjUVYz4mVMixniFY",
            "OY7jSzprKAvomdmyIGoJdTwhrKivHGNxiV05luIetryHvcYheNUx0PFF+N7djQk4Ax9qGavCqxzf8Blq9vZuKq6WTN3xClWINb03",
            "fm7EwzUZjRrNxMX0IqJlTlLYJY8pA8cNKscK/EYKQhHZyrEAH6jXbaKb7X2XWJXtd6+UvkSMK9vnXkm1yz3SV9H2NlU39VEFXdGW",
            "/iLcle1jE29cAp5tXg+N/EXMK6ebTdQ1iNNnEEepV6FWu8myCL2aGCL2le1Pi4kdU51DBbVV4qiVbUOT8s72nif7KqfXYBKgpFQx",
            "tTXUk05Z+yKrcKhsd7mAUGSIcd0CorKNBAq5/lOJyjaQZ8xVaCji3J2vaIu411DZ1jDDq2xbOBV2dF2nUKlsM/gdKtsGjngP6yAH",
            "pqTYVMr37hqpIKqU4c1ATf0LWSilHO7CqVLGNoOVXF0pP1tcr5SVzXgrVVtTTKWSSpnXDNlct7YqNwNhnbKo17RTfXIxc2RNQ1an",
            "TAkgJ09N6ipUCRwZEPijMKzVW92TrKioQv0wt4DUABsf3INswnrICqtSvnIHWKydeqv/dkms0qxRrK42e5reptiQ2Aw6ZBlrAMMS",
            "asspltCcpVjZVMoh/pubSpnDhW4lKnFIYArgShTxTJTkBkVzRdRNoVwpF7jykldpt/uU+TiFtDlnluX2TRXDLqc7yuFFDhEdeYGz",
            "QFPgpiCqr0I8C/BaMbErx8qyzMxB5ZjKrcoyysxCZZPLo4pyxxKp3rCyDDEzEUdQzFaWEWYuKhuWUDBDT2swUhWxhlcgmzR/Rll6",
            "//WD6bgprVKTBIhKumxxx3T4DGDCg5gk/Y+OmjJV0sslaAQNHM8gJFTSOl9MXEvYV0nLfIpomP+YUDSo9jTaHgAN+mGGqOkm044c",
            "vkclvbDwctI0Tpq24KK0K1dWF11p8gowlWnJSscVZJQGVDuXOwBbRJ4Ik6gpGBemuVivgEdLJC5CCIuVcAaTnAr4wYEfgjV44/mT",
            "gjrCkHKAMYalGPfEX5XhbkaPM2CLM2ircFT1XBk2RqBK93eFIHdXLq50W3/JTcXmNTJh9yr8KmyJPWn7le21regUvKo2mo8YhTMI",
            "jDMQjDMYrMeWQFZ5e68uzuCwPq7TK3/ss/TvH7vjP/I=",
        ),
    ),
}


def grid_indices(name: str) -> np.ndarray:  # -> [rows, 8 or 4] uint8: each value's index among its grid's levels
    """The grid `name` (a key of GRIDS) as level indices, decoded on each call (quants.py caches the values)."""
    shape, packed = GRIDS[name]
    raw = zlib.decompress(base64.b64decode("".join(packed)))
    return np.frombuffer(raw, dtype=np.uint8).reshape(shape).copy()
