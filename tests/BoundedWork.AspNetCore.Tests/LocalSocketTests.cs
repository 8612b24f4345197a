using System.Globalization;
using System.Net.Sockets;
using System.Text;
using System.Text.Json;

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
        Assert.StartsWith("local socket peer (uid ", (string)entry.State["User"]!, StringComparison.Ordinal);
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
            stale.Bind(new UnixDomainSocketEndPoint(path)); // bound, never listening: what a crashed process leaves
        }

        await using var server = await AdminServer.StartAsync(configure: b => b.Services.AddBoundedWorkAdmin(o => o.LocalSocketPath = path));

        Assert.Equal(200, LocalSocketClient.Send(path, "GET", "/threadpool").Status);
    }

    private static string SocketPath() => Path.Combine(Path.GetTempPath(), $"bw-{Guid.NewGuid():N}.sock");
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
        using var response = new MemoryStream();
        var buffer = new byte[8192];
        int n;
        while ((n = socket.Receive(buffer)) > 0)
        {
            response.Write(buffer, 0, n);
        }

        var text = Encoding.UTF8.GetString(response.ToArray());
        var split = text.IndexOf("\r\n\r\n", StringComparison.Ordinal);
        var head = text[..split].Split("\r\n");
        var contentTypeLine = head.FirstOrDefault(h => h.StartsWith("Content-Type:", StringComparison.OrdinalIgnoreCase)) ?? "Content-Type: ";
        return new LocalResponse(int.Parse(head[0].AsSpan(9, 3), CultureInfo.InvariantCulture), contentTypeLine["Content-Type:".Length..].Trim(), text[(split + 4)..]);
    }
}
