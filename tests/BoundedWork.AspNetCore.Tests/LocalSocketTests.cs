using System.Globalization;
using System.Net.Sockets;
using System.Text;
using System.Text.Json;
using BoundedWork.AspNetCore.Internal;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>The console's JSON API on a Unix domain socket, served without the ThreadPool.</summary>
[Collection(StarvationCollection.Name)]
public sealed class LocalSocketTests
{
    [Fact]
    public async Task LocalSocket_PoolStarved_ListsExecutorsAndResizes()
    {
        var path = SocketPath();
        await using var server = await AdminServer.StartAsync(configure: b => b.Services.AddBoundedWorkAdmin(o => o.LocalSocketPath = path));
        var payments = server.Payments;

        LocalResponse list, put;
        using (var starvation = ThreadPoolStarvation.Begin())
        {
            list = LocalSocketClient.Send(path, "GET", "/executors");
            put = LocalSocketClient.Send(path, "PUT", "/executors/payments/workers", """{"workers": 7}""");

            Assert.True(starvation.IsStarved, "The pool recovered during the test; the requests proved nothing.");
            Assert.Equal(7, payments.Settings.WorkerCount);
        }

        Assert.Equal(200, list.Status);
        Assert.Equal(["payments", "mail"], list.Json.GetProperty("executors").EnumerateArray().Select(e => e.GetProperty("name").GetString()));
        Assert.Equal(200, put.Status);
        Assert.Equal(2, put.Json.GetProperty("previous").GetProperty("workers").GetInt32());
        Assert.Equal(7, put.Json.GetProperty("current").GetProperty("workers").GetInt32());
        var entry = Assert.Single(server.Logs.WithEvent("SettingsChanged"));
        Assert.StartsWith("local socket peer (uid ", (string)entry.GetStructuredStateValue("User")!, StringComparison.Ordinal);
    }

    [Fact]
    public async Task LocalSocket_EveryRoute_AnswersLikeKestrel()
    {
        var path = SocketPath();
        await using var server = await AdminServer.StartAsync(configure: b => b.Services.AddBoundedWorkAdmin(o => o.LocalSocketPath = path));

        var one = LocalSocketClient.Send(path, "GET", "/executors/payments?history=true");
        var pool = LocalSocketClient.Send(path, "GET", "/threadpool");
        var patch = LocalSocketClient.Send(path, "PATCH", "/executors/mail", """{"queueCapacity": 25, "rejectionPolicy": "Wait"}""");

        Assert.Equal(200, one.Status);
        Assert.True(one.Json.TryGetProperty("history", out _));
        Assert.Equal(200, pool.Status);
        Assert.True(pool.Json.TryGetProperty("isStarved", out _));
        Assert.Equal(200, patch.Status);
        Assert.Equal(25, server.Executor("mail").Settings.QueueCapacity);
        Assert.Equal(RejectionPolicy.Wait, server.Executor("mail").Settings.RejectionPolicy);
    }

    [Theory]
    [InlineData("PUT", "/executors/payments/workers", """{"workers": 0}""", "application/json", true, 400, "workers")]
    [InlineData("PUT", "/executors/payments/workers", """{"workers": 4}""", "text/plain", true, 415, "application/json")]
    [InlineData("PUT", "/executors/payments/workers", """{"workers": 4}""", "application/json", false, 400, "X-BoundedWork-Admin")]
    [InlineData("PATCH", "/executors/nope", """{"workers": 4}""", "application/json", true, 404, "nope")]
    [InlineData("POST", "/executors/payments/workers", """{"workers": 4}""", "application/json", true, 405, "PUT")]
    [InlineData("GET", "/", null, null, false, 404, "/executors")]
    public async Task LocalSocket_BadRequest_ProblemAndNothingChanged(string method, string target, string? body, string? contentType, bool header, int status, string mention)
    {
        var path = SocketPath();
        await using var server = await AdminServer.StartAsync(configure: b => b.Services.AddBoundedWorkAdmin(o => o.LocalSocketPath = path));
        var before = server.Payments.Settings;

        var response = LocalSocketClient.Send(path, method, target, body, contentType, header);

        Assert.Equal(status, response.Status);
        Assert.Equal("application/problem+json", response.ContentType.Split(';')[0]);
        Assert.Contains(mention, response.Body, StringComparison.Ordinal);
        Assert.Equal(before, server.Payments.Settings);
    }

    [Fact]
    public async Task LocalSocket_File_OnlyTheAppsUserMayOpenItNoOneTakesItOverAndItIsRemovedAtStop()
    {
        var path = SocketPath();
        var server = await AdminServer.StartAsync(configure: b => b.Services.AddBoundedWorkAdmin(o => o.LocalSocketPath = path));
        try
        {
            if (!OperatingSystem.IsWindows())
            {
                Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite, File.GetUnixFileMode(path));
            }

            // A second instance may not take over a socket that is in use.
            var error = await Assert.ThrowsAsync<InvalidOperationException>(
                () => AdminServer.StartAsync(configure: b => b.Services.AddBoundedWorkAdmin(o => o.LocalSocketPath = path)));
            Assert.Contains("in use by another process", error.Message, StringComparison.Ordinal);
        }
        finally
        {
            await server.DisposeAsync();
        }

        Assert.False(File.Exists(path));
    }

    [Fact]
    public async Task LocalSocket_StaleFile_IsReplaced()
    {
        var path = SocketPath();
        using (var stale = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified))
        {
            // Bound, never listening, and left behind: what a crashed process leaves (a socket bound to a
            // UnixDomainSocketEndPoint would delete its file when disposed).
            stale.Bind(new UntrackedEndPoint(new UnixDomainSocketEndPoint(path)));
        }

        Assert.True(File.Exists(path), "The test could not leave a stale socket behind.");

        await using var server = await AdminServer.StartAsync(configure: b => b.Services.AddBoundedWorkAdmin(o => o.LocalSocketPath = path));

        Assert.Equal(200, LocalSocketClient.Send(path, "GET", "/threadpool").Status);
    }

    [Fact]
    public async Task LocalSocket_RegularFileAtPath_StartFailsNamingThePathAndKeepsTheFile()
    {
        var path = SocketPath();
        await File.WriteAllTextAsync(path, "precious");
        try
        {
            var error = await Assert.ThrowsAsync<InvalidOperationException>(() => StartWithSocket(path));

            Assert.Contains(path, error.Message, StringComparison.Ordinal);
            Assert.Equal("precious", await File.ReadAllTextAsync(path));
        }
        finally
        {
            File.Delete(path);
        }
    }

    [Fact]
    public async Task LocalSocket_SymbolicLinkAtPath_StartFailsAndNeitherLinkNorTargetIsTouched()
    {
        var path = SocketPath();
        var target = path + ".target";
        await File.WriteAllTextAsync(target, "precious");
        File.CreateSymbolicLink(path, target);
        try
        {
            var error = await Assert.ThrowsAsync<InvalidOperationException>(() => StartWithSocket(path));

            Assert.Contains(path, error.Message, StringComparison.Ordinal);
            Assert.NotNull(new FileInfo(path).LinkTarget);
            Assert.Equal("precious", await File.ReadAllTextAsync(target));
        }
        finally
        {
            File.Delete(path);
            File.Delete(target);
        }
    }

    [Fact]
    public async Task LocalSocket_DirectoryAtPath_StartFailsNamingThePath()
    {
        var path = SocketPath();
        Directory.CreateDirectory(path);
        try
        {
            var error = await Assert.ThrowsAsync<InvalidOperationException>(() => StartWithSocket(path));

            Assert.Contains(path, error.Message, StringComparison.Ordinal);
            Assert.True(Directory.Exists(path));
        }
        finally
        {
            Directory.Delete(path);
        }
    }

    [Fact]
    public async Task LocalSocket_SocketReplacedByAFileWhileRunning_FileIsNotDeletedAtStop()
    {
        var path = SocketPath();
        var server = await StartWithSocket(path);
        try
        {
            File.Delete(path);
            await File.WriteAllTextAsync(path, "someone else's");
        }
        finally
        {
            await server.DisposeAsync();
        }

        try
        {
            Assert.Equal("someone else's", await File.ReadAllTextAsync(path));
        }
        finally
        {
            File.Delete(path);
        }
    }

    [Fact]
    public async Task LocalSocket_FolderDoesNotExist_StartFailsNamingThePathAndTheFolder()
    {
        var folder = Path.Combine(Path.GetTempPath(), $"bw-missing-{Guid.NewGuid():N}");
        var path = Path.Combine(folder, "admin.sock");

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => StartWithSocket(path));

        Assert.Contains(path, error.Message, StringComparison.Ordinal);
        Assert.Contains("does not exist", error.Message, StringComparison.Ordinal);
        Assert.False(Directory.Exists(folder));
    }

    [Fact]
    public async Task LocalSocket_SilentClients_OthersAreAnsweredWhileTheyStayConnected()
    {
        var path = SocketPath();
        await using var server = await StartWithSocket(path, s_patient);
        var silent = Enumerable.Range(0, 5).Select(_ => RawClient.Connect(path)).ToList();
        try
        {
            var response = LocalSocketClient.Send(path, "GET", "/threadpool");

            Assert.Equal(200, response.Status);
            Assert.All(silent, client => Assert.False(client.ClosedByServer, "A silent client was cut off before another client was answered: clients are served one at a time."));
        }
        finally
        {
            silent.ForEach(client => client.Dispose());
        }
    }

    [Fact]
    public async Task LocalSocket_ClientTricklingBytes_IsCutOffAtTheWholeRequestDeadline()
    {
        var path = SocketPath();
        await using var server = await StartWithSocket(path, s_patient with { RequestTimeout = TimeSpan.FromSeconds(1) });
        using var trickler = RawClient.Connect(path);

        // One byte of a never-ending header at a time: a per-read timeout never fires, a deadline for the whole request does.
        var sent = 0;
        while (!trickler.ClosedByServer)
        {
            Assert.True(sent < 400, "The server still reads a request that has trickled in for far longer than its deadline.");
            trickler.TrySend("X"u8);
            sent++;
            Thread.Sleep(100); // load: the trickle's pace (the server's deadline, not this, ends the loop)
        }
    }

    [Fact]
    public async Task LocalSocket_MoreIdleClientsThanAllowed_TheNextOneGets503AtOnce()
    {
        var path = SocketPath();
        await using var server = await StartWithSocket(path, s_patient);
        var idle = Enumerable.Range(0, MaxClients).Select(_ => RawClient.Connect(path)).ToList();
        try
        {
            var response = LocalSocketClient.Send(path, "GET", "/executors");

            Assert.Equal(503, response.Status);
            Assert.Equal("application/problem+json", response.ContentType.Split(';')[0]);
            Assert.All(idle, client => Assert.False(client.ClosedByServer));
        }
        finally
        {
            idle.ForEach(client => client.Dispose());
        }

        // Once the idle clients are gone (their threads see the end of their connections), the socket serves again.
        Assert.True(
            SpinWait.SpinUntil(() => LocalSocketClient.Send(path, "GET", "/executors").Status == 200, TestKit.Safety),
            "The socket kept refusing after the idle clients left.");
    }

    [Fact]
    public async Task LocalSocket_HostStopsWhileAClientTrickles_TheClientIsClosedAndStopDoesNotWaitForIt()
    {
        var path = SocketPath();
        var server = await StartWithSocket(path, s_patient);
        using var trickler = RawClient.Connect(path);
        using var stop = new CancellationTokenSource();
        var feeding = new Thread(() =>
        {
            while (!stop.IsCancellationRequested && trickler.TrySend("X"u8))
            {
                Thread.Sleep(200); // load: the trickle's pace; the test waits for nothing but DisposeAsync
            }
        }) { IsBackground = true };
        feeding.Start();
        try
        {
            trickler.TrySend("GET /executors HTTP/1.1\r\n"u8);
            await server.DisposeAsync();

            Assert.True(trickler.ClosedByServer, "The host stopped but left a client's connection open: its thread still serves it.");
        }
        finally
        {
            stop.Cancel();
            feeding.Join();
        }
    }

    [Fact]
    public async Task LocalSocket_DuplicateContentLength_400AndNothingChanged()
    {
        var path = SocketPath();
        await using var server = await StartWithSocket(path);
        var before = server.Payments.Settings;
        var body = """{"workers": 5}""";

        var response = RawClient.Exchange(
            path,
            $"PUT /executors/payments/workers HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n{TestKit.AdminHeader}: 1\r\nContent-Length: 2\r\nContent-Length: {body.Length}\r\n\r\n{body}");

        Assert.Equal(400, response.Status);
        Assert.Contains("Content-Length", response.Body, StringComparison.Ordinal);
        Assert.Equal(before, server.Payments.Settings);
    }

    [Fact]
    public async Task LocalSocket_BareLineFeeds_AnsweredWithoutWaitingForMore()
    {
        var path = SocketPath();
        await using var server = await StartWithSocket(path);

        // The client keeps its side open: an answer proves the server saw the end of the request.
        var response = RawClient.Exchange(path, "GET /threadpool HTTP/1.1\nHost: localhost\n\n", keepOpen: true);

        Assert.Equal(200, response.Status);
        Assert.True(response.Json.TryGetProperty("isStarved", out _));
    }

    [Theory]
    [InlineData("GET /threadpool HTTP/1.1\r\nHost localhost\r\n\r\n", "header")]
    [InlineData("GET /threadpool HTTP/1.1\r\nHost : localhost\r\n\r\n", "header")]
    [InlineData("GET /threadpool HTTP/1.1\r\nHost: local\rhost\r\n\r\n", "CR")]
    [InlineData("GET /threadpool HTTP/1.1\r\nHost: localhost\r\n folded\r\n\r\n", "header")]
    public async Task LocalSocket_MalformedHeaders_400(string request, string mention)
    {
        var path = SocketPath();
        await using var server = await StartWithSocket(path);

        var response = RawClient.Exchange(path, request, keepOpen: true);

        Assert.Equal(400, response.Status);
        Assert.Contains(mention, response.Body, StringComparison.Ordinal);
    }

    private const int MaxClients = 16;

    /// <summary>A request deadline no test run reaches: only the behaviour under test can close a connection.</summary>
    private static readonly LocalSocketLimits s_patient = new(MaxClients, TimeSpan.FromMinutes(10));

    private static Task<AdminServer> StartWithSocket(string path, LocalSocketLimits? limits = null) =>
        AdminServer.StartAsync(configure: b => b.Services.AddBoundedWorkAdmin(o =>
        {
            o.LocalSocketPath = path;
            o.LocalSocketLimits = limits ?? LocalSocketLimits.Default;
        }));

    private static string SocketPath() => Path.Combine(Path.GetTempPath(), $"bw-{Guid.NewGuid():N}.sock");
}

/// <summary>A raw client connection for the tests that misbehave on purpose (blocking calls only).</summary>
public sealed class RawClient : IDisposable
{
    private readonly Socket _socket;

    private RawClient(Socket socket) => _socket = socket;

    /// <summary>Gets a value indicating whether the server has closed the connection (or answered and closed it).</summary>
    public bool ClosedByServer
    {
        get
        {
            try
            {
                // Readable with nothing to read means end of stream; an answer followed by the end counts too.
                return _socket.Poll(0, SelectMode.SelectRead);
            }
            catch (Exception e) when (e is SocketException or ObjectDisposedException)
            {
                return true;
            }
        }
    }

    public static RawClient Connect(string path)
    {
        var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        socket.ReceiveTimeout = socket.SendTimeout = (int)TestKit.Safety.TotalMilliseconds;
        socket.Connect(new UnixDomainSocketEndPoint(path));
        return new RawClient(socket);
    }

    /// <summary>Sends raw request text and reads the whole answer; <paramref name="keepOpen"/> leaves the client's side open.</summary>
    public static LocalResponse Exchange(string path, string request, bool keepOpen = false)
    {
        using var client = Connect(path);
        client._socket.Send(Encoding.ASCII.GetBytes(request));
        if (!keepOpen)
        {
            client._socket.Shutdown(SocketShutdown.Send);
        }

        return LocalSocketClient.ReadResponse(client._socket);
    }

    public bool TrySend(ReadOnlySpan<byte> bytes)
    {
        try
        {
            return _socket.Send(bytes) == bytes.Length;
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException)
        {
            return false;
        }
    }

    public void Dispose() => _socket.Dispose();
}

public sealed record LocalResponse(int Status, string ContentType, string Body)
{
    public JsonElement Json => JsonDocument.Parse(Body).RootElement.Clone();
}

/// <summary>A minimal HTTP/1.1 client over a Unix domain socket, with blocking calls only (no ThreadPool).</summary>
public static class LocalSocketClient
{
    public static LocalResponse Send(string path, string method, string target, string? body = null, string? contentType = "application/json", bool header = true)
    {
        using var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        socket.ReceiveTimeout = socket.SendTimeout = (int)TestKit.Safety.TotalMilliseconds;
        socket.Connect(new UnixDomainSocketEndPoint(path));
        var bytes = Encoding.UTF8.GetBytes(body ?? "");
        var request = new StringBuilder($"{method} {target} HTTP/1.1\r\nHost: localhost\r\n");
        if (body is not null)
        {
            request.Append(CultureInfo.InvariantCulture, $"Content-Type: {contentType}\r\nContent-Length: {bytes.Length}\r\n");
        }

        if (header)
        {
            request.Append(CultureInfo.InvariantCulture, $"{TestKit.AdminHeader}: 1\r\n");
        }

        socket.Send([.. Encoding.ASCII.GetBytes(request.Append("\r\n").ToString()), .. bytes]);
        return ReadResponse(socket);
    }

    /// <summary>Reads a whole response, up to the server closing the connection.</summary>
    public static LocalResponse ReadResponse(Socket socket)
    {
        using var response = new MemoryStream();
        var buffer = new byte[8192];
        int n;
        while ((n = socket.Receive(buffer)) > 0)
        {
            response.Write(buffer, 0, n);
        }

        var text = Encoding.UTF8.GetString(response.ToArray());
        var split = text.IndexOf("\r\n\r\n", StringComparison.Ordinal);
        Assert.True(split >= 0, $"No complete response: '{text}'.");
        var head = text[..split].Split("\r\n");
        var contentTypeLine = head.FirstOrDefault(h => h.StartsWith("Content-Type:", StringComparison.OrdinalIgnoreCase)) ?? "Content-Type: ";
        return new LocalResponse(int.Parse(head[0].AsSpan(9, 3), CultureInfo.InvariantCulture), contentTypeLine["Content-Type:".Length..].Trim(), text[(split + 4)..]);
    }
}
