"""Camera (``com.android.camera2``): a viewfinder, Photo and Video modes, a shutter.

Data: ``photos`` and ``videos`` taken, ``recording`` (a video is being recorded), ``mode``.
"""

from __future__ import annotations

from functools import partial

from distrl.sim.app import BaseApp, Context, Json
from distrl.sim.apps.widgets import W, launch_nuisance
from distrl.sim.ui import Box, Colour, Element, Palette

__all__ = ["Camera"]


class Camera(BaseApp):
    """A camera: viewfinder, Photo/Video modes, shutter. Data: ``photos``, ``videos``, ``recording``."""

    package = "com.android.camera2"
    activity = "com.android.camera.CameraLauncher"
    label = "Camera"
    icon = "Ca"
    colour = (95, 99, 104)

    def defaults(self) -> Json:
        return {"photos": 0, "videos": 0, "recording": False, "mode": "photo"}

    def on_launch(self, ctx: Context) -> None:
        launch_nuisance(
            ctx,
            (
                "camera_location",
                "Save location?",
                "Tag your photos and videos with the location where they're taken.",
                ("No thanks", "Turn on"),
            ),
            p_dialog=0.2,
        )

    def on_dialog(self, ctx: Context, dialog: str, button: str) -> None:
        if dialog == "camera_location":
            ctx.data["save_location"] = button == "Turn on"

    def view(self, ctx: Context) -> list[Element]:
        data = ctx.data
        height = ctx.viewport_height
        mode = str(data.get("mode", "photo"))
        recording = bool(data.get("recording"))
        dark: Colour = (18, 18, 20)
        out = [
            Element(id="camera/background", box=Box(0, 0, W, height), kind="bar", fill=dark, fixed=True),
            Element(
                id="camera/viewfinder",
                box=Box(0, 56, W, 56 + W * 4 / 3),
                kind="card",
                fill=(58, 66, 72),
                radius=0,
                fixed=True,
            ),
            Element(
                id="camera/scene", box=Box(60, 180, W - 60, 420), kind="image", fill=(58, 66, 72), fixed=True
            ),
        ]
        if recording:
            out.append(
                Element(
                    id="camera/recording",
                    box=Box(W / 2 - 50, 12, W / 2 + 50, 44),
                    kind="card",
                    text="REC",
                    fill=(217, 48, 37),
                    colour=Palette.ON_PRIMARY,
                    radius=16,
                    size=14,
                    bold=True,
                    align="centre",
                    fixed=True,
                )
            )
        modes_y = height - 168
        for i, (name, text) in enumerate((("photo", "Photo"), ("video", "Video"))):
            box = Box(W / 2 - 100 + i * 104, modes_y, W / 2 - 4 + i * 104, modes_y + 36)
            chosen = name == mode
            out.append(
                Element(
                    id=f"camera/mode/{name}",
                    box=box,
                    kind="card",
                    text=text,
                    size=15,
                    bold=chosen,
                    fill=(60, 64, 67) if chosen else dark,
                    colour=(255, 255, 255),
                    radius=18,
                    align="centre",
                    fixed=True,
                    on_tap=partial(self._mode, ctx, name),
                )
            )
        shutter_y = height - 112
        ring: Colour = (217, 48, 37) if mode == "video" else (255, 255, 255)
        out.append(
            Element(
                id="camera/shutter",
                box=Box(W / 2 - 38, shutter_y, W / 2 + 38, shutter_y + 76),
                kind="icon",
                icon="",
                fill=ring,
                radius=38,
                fixed=True,
                on_tap=lambda: self._shoot(ctx),
            )
        )
        shots = int(data.get("photos", 0)) + int(data.get("videos", 0))
        out.append(
            Element(
                id="camera/thumbnail",
                box=Box(40, shutter_y + 14, 88, shutter_y + 62),
                kind="card",
                fill=(120, 130, 140) if shots else (40, 40, 44),
                radius=24,
                fixed=True,
            )
        )
        out.append(
            Element(
                id="camera/switch",
                box=Box(W - 88, shutter_y + 14, W - 40, shutter_y + 62),
                kind="icon",
                icon="<>",
                fill=(40, 40, 44),
                colour=(255, 255, 255),
                radius=24,
                fixed=True,
                on_tap=lambda: ctx.toast("Switched camera"),
            )
        )
        return out

    def _mode(self, ctx: Context, mode: str) -> None:
        if ctx.data.get("recording"):
            return
        ctx.data["mode"] = mode

    def _shoot(self, ctx: Context) -> None:
        data = ctx.data
        if data.get("mode") == "video":
            if data.get("recording"):
                data["recording"] = False
                data["videos"] = int(data.get("videos", 0)) + 1
                ctx.toast("Video saved")
            else:
                data["recording"] = True
            return
        data["photos"] = int(data.get("photos", 0)) + 1
        ctx.toast("Photo saved")
