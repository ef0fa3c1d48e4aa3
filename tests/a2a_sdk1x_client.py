"""The real a2a-sdk 1.x client, for an interpreter that has it (a2a-sdk 1.x cannot be installed
beside the project's 0.3): tests/test_a2a_sdk_clients.py runs this file with the Python named by
PIBENCH_A2A_SDK1_PYTHON, against our servers on loopback.

    python tests/a2a_sdk1x_client.py send URL '<data part JSON>'  -> the events, one JSON per line
    python tests/a2a_sdk1x_client.py stream URL '<data part JSON>'

Each event is printed as a2a-sdk 1.x gives it to its caller (MessageToDict of the stream
response). A JSON-RPC error the SDK raises is printed as {"error": {"type", "message"}}.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid


async def main(mode: str, url: str, data: dict) -> None:
    from a2a.client import ClientConfig, create_client
    from a2a.helpers.proto_helpers import new_data_part
    from a2a.types.a2a_pb2 import Message, Role, SendMessageRequest
    from google.protobuf.json_format import MessageToDict

    import httpx

    http = httpx.AsyncClient(timeout=300)
    client = await create_client(url, client_config=ClientConfig(streaming=mode == "stream", httpx_client=http))
    message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[new_data_part(data)])
    try:
        async for event in client.send_message(SendMessageRequest(message=message)):
            print(json.dumps(MessageToDict(event)), flush=True)
    except Exception as err:  # noqa: BLE001 (the SDK's error is the result)
        print(json.dumps({"error": {"type": type(err).__name__, "message": str(err)}}), flush=True)
    finally:
        await client.close()
        await http.aclose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
