"""The Python SDK's way to run a query on Amp: GetFlightInfo with an Any-packed
arrow.flight.protocol.sql.CommandStatementQuery, then DoGet of the first endpoint's ticket.
Shared by the benchmark scripts (and their subprocess peers)."""
import pyarrow.flight as flight
from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory


def do_get(url: str, sql: str):
    pool = descriptor_pool.DescriptorPool()
    fd = descriptor_pb2.FileDescriptorProto(name="q.proto", package="arrow.flight.protocol.sql")
    msg = fd.message_type.add(name="CommandStatementQuery")
    msg.field.add(name="query", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                  label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool.Add(fd)
    cls = message_factory.GetMessageClass(
        pool.FindMessageTypeByName("arrow.flight.protocol.sql.CommandStatementQuery"))
    command = any_pb2.Any()
    command.Pack(cls(query=sql))
    client = flight.connect(url)
    info = client.get_flight_info(flight.FlightDescriptor.for_command(command.SerializeToString()))
    return client.do_get(info.endpoints[0].ticket)
