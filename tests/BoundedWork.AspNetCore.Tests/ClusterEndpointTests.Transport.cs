using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Text.Json;
using BoundedWork.Testing.Cluster;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// The cluster routes against what a client can do to the bytes of a request, on real Kestrel on loopback: a body that
/// trickles in, a header the routes read sent twice, a body that is not UTF-8, and a JSON list where an object goes.
/// </summary>
public sealed partial class ClusterEndpointTests
{
    /// <summary>
    /// A PATCH whose body arrives a byte at a time, far below Kestrel's minimum request body data rate (240 bytes a
    /// second after a 5-second grace, by default): Kestrel answers 408 and closes the connection, the change is never
    /// made, and the server reads and changes the cluster for other clients all the while.
    /// </summary>
    [Fact]
    public async Task Patch_BodyTricklingIn_408_NothingChanges_AndOthersAreServedMeanwhile()
    {
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster);
        var body = Encoding.UTF8.GetBytes($$"""{"maxRunning": 5, "startBurst": 9{{new string(' ', 200)}}}""");
        using var slow = await RawClient.ConnectAsync(server.BaseAddress);
        await slow.WriteAsync(Head("PATCH", Path, ("Content-Type", "application/json"), ("Content-Length", body.Length.ToString(System.Globalization.CultureInfo.InvariantCulture))));
        var answer = slow.ReadResponseAsync();

        // A byte every 200 ms is 5 bytes a second: however loaded the machine, far below the minimum rate.
        var sent = 0;
        var others = 0;
        while (!answer.IsCompleted && sent < body.Length)
        {
            if (!await slow.TryWriteAsync(body.AsMemory(sent, 1)))
            {
                break; // the server closed the connection: its answer is on the way
            }

            sent++;
            if (sent == 1)
            {
                // The slow request holds its connection; the others are served as usual.
                using var read = await server.Client.GetAsync(Path);
                using var change = await server.Client.SendChangeAsync(HttpMethod.Patch, Path, """{"maxRunning": 7}""");
                Assert.Equal(HttpStatusCode.OK, read.StatusCode);
                Assert.Equal(HttpStatusCode.OK, change.StatusCode);
                others = 2;
            }

            await Task.WhenAny(answer, Task.Delay(200));
        }

        var response = await answer.WaitAsync(TimeSpan.FromSeconds(60));
        Assert.True(sent < body.Length, "the whole body went out before the server gave up on it");
        Assert.Equal(408, response.Status);
        Assert.Equal(2, others);
        Assert.Single(cluster.Changes); // the other client's
        Assert.Equal(7, cluster.Settings.MaxRunning);
        Assert.Null(cluster.Settings.StartBurst);
        Assert.Single(server.Logs.WithEvent("ClusterSettingsChanged"));
    }

    public static TheoryData<string, string> DuplicatedHeaders() => new()
    {
        { "Content-Type", "application/json" },
        { "Content-Type", "text/plain" },
        { "X-BoundedWork-Admin", "1" },
        { "X-BoundedWork-Admin", "" },
    };

    /// <summary>
    /// A change that carries a header the route reads twice (the content type, the console's request header) is
    /// refused with a 400 that names the header, whichever values the copies hold: the console never picks one.
    /// </summary>
    [Theory]
    [MemberData(nameof(DuplicatedHeaders))]
    public async Task Patch_AHeaderTheRouteReadsSentTwice_400NamingIt_NothingChanges(string header, string secondValue)
    {
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster);
        var body = Encoding.UTF8.GetBytes("""{"maxRunning": 5}""");
        using var client = await RawClient.ConnectAsync(server.BaseAddress);

        await client.WriteAsync(Head("PATCH", Path, ("Content-Type", "application/json"), (header, secondValue), ("Content-Length", body.Length.ToString(System.Globalization.CultureInfo.InvariantCulture))));
        await client.WriteAsync(body);
        var response = await client.ReadResponseAsync().WaitAsync(TimeSpan.FromSeconds(60));

        Assert.True(response.Status == 400, response.Text);
        var problem = JsonDocument.Parse(response.Body).RootElement;
        Assert.Equal(header, problem.GetProperty("header").GetString());
        Assert.Contains(header, problem.GetProperty("detail").GetString(), StringComparison.Ordinal);
        Assert.Contains("more than once", problem.GetProperty("detail").GetString(), StringComparison.Ordinal);
        Assert.Empty(cluster.Changes);
        Assert.Equal("duplicate_header", Assert.Single(server.Logs.WithEvent("ClusterSettingsChangeRefused")).GetStructuredStateValue("Reason"));
    }

    /// <summary>
    /// The same over the local socket, whose parser used to keep the last copy: <c>text/plain</c> then
    /// <c>application/json</c> went through as JSON.
    /// </summary>
    [Theory]
    [InlineData("Content-Type: text/plain\r\nContent-Type: application/json\r\n", "Content-Type")]
    [InlineData("Content-Type: application/json\r\nX-BoundedWork-Admin: 1\r\nx-boundedwork-admin: 1\r\n", "X-BoundedWork-Admin")]
    public async Task LocalSocket_AHeaderTheRouteReadsSentTwice_400NamingIt_NothingChanges(string headers, string header)
    {
        var socketPath = System.IO.Path.Combine(System.IO.Path.GetTempPath(), $"bw-cl2-{Guid.NewGuid():N}.sock");
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster, socketPath);
        var body = """{"maxRunning": 5}""";

        using var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        socket.ReceiveTimeout = socket.SendTimeout = (int)TestKit.Safety.TotalMilliseconds;
        socket.Connect(new UnixDomainSocketEndPoint(socketPath));
        socket.Send(Encoding.ASCII.GetBytes($"PATCH /queues/payments/cluster HTTP/1.1\r\nHost: localhost\r\n{headers}Content-Length: {body.Length}\r\n\r\n{body}"));
        var response = LocalSocketClient.ReadResponse(socket);

        Assert.True(response.Status == 400, response.Body);
        Assert.Equal(header, response.Json.GetProperty("header").GetString());
        Assert.Empty(cluster.Changes);
        Assert.Equal("duplicate_header", Assert.Single(server.Logs.WithEvent("ClusterSettingsChangeRefused")).GetStructuredStateValue("Reason"));
    }

    public static TheoryData<byte[], string> MalformedUtf8Bodies() => new()
    {
        // An overlong encoding of '/' in a string value.
        { [.. "{\"startsPerSecond\": \""u8, 0xC0, 0xAF, .. "\"}"u8], "startsPerSecond" },
        // A UTF-16 surrogate encoded as UTF-8 in a field name.
        { [.. "{\"max"u8, 0xED, 0xA0, 0x80, .. "\": 5}"u8], "body" },
        // A field name cut in the middle of a sequence, the body otherwise whole.
        { [.. "{\"maxRunning\": 5, \"x"u8, 0xE2, 0x82, .. "\": 1}"u8], "body" },
        // A lone surrogate escaped in a field name: valid JSON, not text.
        { "{\"\\uD800\": 5}"u8.ToArray(), "body" },
        // Latin-1 bytes where the value should be.
        { [.. "{\"maxRunning\": \""u8, 0xE9, .. "\"}"u8], "maxRunning" },
        // A byte-order mark before the object.
        { [0xEF, 0xBB, 0xBF, .. "{\"maxRunning\": 5}"u8], "body" },
    };

    [Theory]
    [MemberData(nameof(MalformedUtf8Bodies))]
    public async Task Patch_BodyInMalformedUtf8_400NamingTheField_NothingChanges(byte[] body, string field)
    {
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster);

        using var response = await server.Client.SendRawChangeAsync(HttpMethod.Patch, Path, body);

        await AssertRefused(response, field, cluster, server);
    }

    [Theory]
    [InlineData("[]")]
    [InlineData("[{\"maxRunning\": 5}]")]
    [InlineData("[{\"maxRunning\": 5}, {\"startBurst\": 2}]")]
    [InlineData("[[\"maxRunning\", 5]]")]
    [InlineData("  [ ]  ")]
    public async Task Patch_AJsonListWhereAnObjectGoes_400NamingTheBody_NothingChanges(string body)
    {
        var cluster = NewCluster();
        await using var server = await StartAsync(cluster);

        using var response = await server.Client.SendChangeAsync(HttpMethod.Patch, Path, body);

        await AssertRefused(response, "body", cluster, server);
        var problem = await response.JsonAsync();
        Assert.Contains("must be a JSON object, not an array", problem.GetProperty("errors").GetProperty("body")[0].GetString(), StringComparison.Ordinal);
    }

    /// <summary>An HTTP/1.1 request head as the test client (alice, an operator) sends it, with the console's request header.</summary>
    private static byte[] Head(string method, string path, params (string Name, string Value)[] headers)
    {
        var head = new StringBuilder()
            .Append(method).Append(' ').Append(path).Append(" HTTP/1.1\r\n")
            .Append("Host: 127.0.0.1\r\n")
            .Append("X-Test-User: alice\r\n")
            .Append("X-Test-Roles: ops\r\n")
            .Append(TestKit.AdminHeader).Append(": 1\r\n")
            .Append("Connection: close\r\n");
        foreach (var (name, value) in headers)
        {
            head.Append(name).Append(": ").Append(value).Append("\r\n");
        }

        return Encoding.ASCII.GetBytes(head.Append("\r\n").ToString());
    }

    /// <summary>A TCP connection to the test server that sends bytes as the test says and reads one answer to the end.</summary>
    private sealed class RawClient : IDisposable
    {
        private readonly TcpClient _tcp;
        private readonly NetworkStream _stream;

        private RawClient(TcpClient tcp)
        {
            _tcp = tcp;
            _stream = tcp.GetStream();
        }

        public static async Task<RawClient> ConnectAsync(Uri baseAddress)
        {
            var tcp = new TcpClient();
            await tcp.ConnectAsync(IPAddress.Loopback, baseAddress.Port);
            return new RawClient(tcp);
        }

        public async Task WriteAsync(ReadOnlyMemory<byte> bytes) => await _stream.WriteAsync(bytes);

        /// <summary>Writes, or says the server has closed the connection.</summary>
        public async Task<bool> TryWriteAsync(ReadOnlyMemory<byte> bytes)
        {
            try
            {
                await _stream.WriteAsync(bytes);
                return true;
            }
            catch (IOException)
            {
                return false;
            }
        }

        /// <summary>Reads until the server closes the connection (every request here says <c>Connection: close</c>).</summary>
        public async Task<RawResponse> ReadResponseAsync()
        {
            using var all = new MemoryStream();
            var buffer = new byte[4096];
            try
            {
                int read;
                while ((read = await _stream.ReadAsync(buffer)) > 0)
                {
                    all.Write(buffer, 0, read);
                }
            }
            catch (IOException) when (all.Length > 0)
            {
                // A reset after the answer: the answer is what counts.
            }

            var text = Encoding.UTF8.GetString(all.ToArray());
            var status = text.Length >= 12 ? int.Parse(text.AsSpan(9, 3), System.Globalization.CultureInfo.InvariantCulture) : 0;
            var bodyAt = text.IndexOf("\r\n\r\n", StringComparison.Ordinal);
            return new RawResponse(status, text, bodyAt < 0 ? string.Empty : text[(bodyAt + 4)..]);
        }

        public void Dispose()
        {
            _stream.Dispose();
            _tcp.Dispose();
        }
    }

    private sealed record RawResponse(int Status, string Text, string Body);
}
